import { type Backoff, backoffMs, type Schedule } from "@mediagate/io";
import type { Logger } from "../log.js";
import type { KeptTurn } from "../pipeline/types.js";

/** Options of {@link KeptTurns}. */
export interface KeptTurnsOptions {
  /** Resolves once the store answers (a PostgreSQL `SELECT 1`); rejects while it does not. */
  readonly probe: () => Promise<unknown>;
  /** Hands a kept turn on; rejects (the turn stays kept) when the store fails again. */
  readonly resume: (turn: KeptTurn) => Promise<void>;
  /** The wait between probes (`Defaults.gateway.keptRetryMinMs` doubling to `…MaxMs`). */
  readonly backoff: Backoff;
  readonly schedule: Schedule;
  readonly logger: Logger;
}

/**
 * The turns whose end the PostgreSQL store did not take while it was down (docs/store.md,
 * "While PostgreSQL is down"): their entries stay unfinished in the journal, owned by this
 * process, and each is handed on once, after a probe of the store answers, by the rule of a
 * start's recovery (`resumeKeptTurn`, recovery.ts). The probes back off while the store stays down; a
 * message recorded again ({@link storeAnswered}) probes at once. A stop ends the probes: what
 * is still kept stays in the journal for the next start.
 */
export class KeptTurns {
  readonly #options: KeptTurnsOptions;
  readonly #turns = new Map<number, KeptTurn>();
  #failedProbes = 0;
  #cancel: (() => void) | undefined;
  #probing = false;
  #stopped = false;

  constructor(options: KeptTurnsOptions) {
    this.#options = options;
  }

  /** Keeps `turn` until the store answers. */
  add(turn: KeptTurn): void {
    if (this.#stopped) return;
    this.#turns.set(turn.entryId, turn);
    this.#arm();
  }

  /** The store took a write: the kept turns go on now rather than at the next probe. */
  storeAnswered(): void {
    if (this.#turns.size === 0 || this.#stopped) return;
    this.#cancel?.();
    this.#cancel = undefined;
    void this.#probe();
  }

  /** Turns kept now. */
  get size(): number {
    return this.#turns.size;
  }

  /** Ends the probes; the kept turns stay in the journal for the next start. */
  stop(): void {
    this.#stopped = true;
    this.#cancel?.();
    this.#cancel = undefined;
  }

  #arm(): void {
    if (this.#cancel !== undefined || this.#probing || this.#stopped || this.#turns.size === 0)
      return;
    const waitMs = backoffMs(this.#failedProbes + 1, this.#options.backoff);
    this.#cancel = this.#options.schedule(() => {
      this.#cancel = undefined;
      void this.#probe();
    }, waitMs);
  }

  async #probe(): Promise<void> {
    if (this.#probing || this.#stopped) return;
    this.#probing = true;
    try {
      await this.#options.probe();
      this.#failedProbes = 0;
      const turns = [...this.#turns.values()];
      this.#options.logger.info(
        { kept: turns.length },
        "the store answers again: running the turns kept while it did not",
      );
      for (const turn of turns) {
        if (this.#stopped) return;
        this.#turns.delete(turn.entryId);
        try {
          await this.#options.resume(turn);
        } catch (error) {
          this.#turns.set(turn.entryId, turn);
          this.#failedProbes += 1;
          this.#options.logger.warn(
            { err: error, entryId: turn.entryId },
            "a kept turn could not go on yet; it stays kept",
          );
          return;
        }
      }
    } catch {
      this.#failedProbes += 1;
    } finally {
      this.#probing = false;
      this.#arm();
    }
  }
}
