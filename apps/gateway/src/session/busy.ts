/**
 * The messages of one session collected for its next turn (`busyMode: collect`,
 * docs/sessions.md): the first one owns the queued turn, the others join it until it starts.
 */
export class CollectedTurn<T> {
  readonly #members: T[];
  #open = true;
  readonly #settled: Promise<void>;
  #settle: () => void = () => {};

  constructor(owner: T) {
    this.#members = [owner];
    this.#settled = new Promise((resolve) => {
      this.#settle = resolve;
    });
  }

  /** Messages in it so far, the owner's included. */
  get size(): number {
    return this.#members.length;
  }

  /** Whether messages may still join (its turn has not started or been dropped). */
  get open(): boolean {
    return this.#open;
  }

  /** Adds a message; false once the turn started or was dropped. */
  join(member: T): boolean {
    if (!this.#open) return false;
    this.#members.push(member);
    return true;
  }

  /** No more joining: the turn starts (or was dropped). Answers the members, owner first. */
  close(): readonly T[] {
    this.#open = false;
    return [...this.#members];
  }

  /** Resolves when the owner's turn ended, whatever became of it. */
  get settled(): Promise<void> {
    return this.#settled;
  }

  /** The owner's turn ended. */
  end(): void {
    this.#open = false;
    this.#settle();
  }
}

/**
 * Process-wide state of busy sessions: the turn being collected per session (`collect` mode),
 * and the sessions whose chat was told its queue is full (told once until a message is
 * accepted again, so a flood gets one notice, not one per message).
 */
export class BusySessions<T = unknown> {
  readonly #collecting = new Map<string, CollectedTurn<T>>();
  readonly #toldFull = new Set<string>();

  /**
   * The session's collected turn that messages may still join: open, and still waiting in
   * the queue (`waiting` is the session's queued count; 0 means it started or was dropped).
   */
  collecting(sessionKey: string, waiting: number): CollectedTurn<T> | undefined {
    const turn = this.#collecting.get(sessionKey);
    if (turn === undefined || !turn.open || waiting === 0) return undefined;
    return turn;
  }

  /** Starts collecting a new turn for the session, owned by `owner`. */
  collect(sessionKey: string, owner: T): CollectedTurn<T> {
    const turn = new CollectedTurn(owner);
    this.#collecting.set(sessionKey, turn);
    return turn;
  }

  /** The turn ended: forgotten, unless a newer one replaced it. */
  ended(sessionKey: string, turn: CollectedTurn<T>): void {
    turn.end();
    if (this.#collecting.get(sessionKey) === turn) this.#collecting.delete(sessionKey);
  }

  /** Whether the session's chat is to be told its queue is full (once per flood). */
  tellFull(sessionKey: string): boolean {
    if (this.#toldFull.has(sessionKey)) return false;
    if (this.#toldFull.size > 10_000) this.#toldFull.clear();
    this.#toldFull.add(sessionKey);
    return true;
  }

  /** A message of the session was accepted: the next overflow is told again. */
  accepted(sessionKey: string): void {
    this.#toldFull.delete(sessionKey);
  }
}
