import type { LogQuery, LogView } from "@mediagate/web";

/** pino's numeric levels by name, and back. */
const LevelNumbers: Readonly<Record<string, number>> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
};
const LevelNames = new Map(Object.entries(LevelNumbers).map(([name, n]) => [n, name]));

interface Kept {
  readonly seq: number;
  readonly line: string;
  parsed?: LogView | undefined;
}

/**
 * The last `capacity` log lines, as the logger wrote them (JSON, secrets already redacted),
 * for the web console's Logs page and its recent errors. Keeping a line costs one array slot;
 * lines are parsed only when someone asks for them. Listeners hear of each new line.
 */
export class LogRing {
  readonly #capacity: number;
  readonly #lines: Kept[] = [];
  readonly #listeners = new Set<() => void>();
  #seq = 0;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** Keeps one JSON line. */
  push(line: string): void {
    this.#seq += 1;
    this.#lines.push({ seq: this.#seq, line });
    if (this.#lines.length > this.#capacity) this.#lines.shift();
    for (const listener of this.#listeners) listener();
  }

  /** Hears of every new line until the answered function is called. */
  listen(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The kept lines that match, oldest first, at most `limit` (the newest ones). */
  query(query: LogQuery = {}): LogView[] {
    const min = LevelNumbers[query.level ?? "trace"] ?? 0;
    const after = query.after ?? 0;
    const session = query.session?.trim() ?? "";
    const out: LogView[] = [];
    for (const kept of this.#lines) {
      if (kept.seq <= after) continue;
      kept.parsed ??= parse(kept.seq, kept.line);
      const view = kept.parsed;
      if ((LevelNumbers[view.level] ?? 0) < min) continue;
      if (session !== "" && !(view.sessionKey ?? "").includes(session)) continue;
      out.push(view);
    }
    const limit = query.limit ?? out.length;
    return out.slice(Math.max(0, out.length - limit));
  }
}

function parse(seq: number, line: string): LogView {
  try {
    const entry = JSON.parse(line) as Record<string, unknown>;
    const { level, time, msg, sessionKey, pid: _pid, hostname: _host, ...rest } = entry;
    return {
      seq,
      timeMs: typeof time === "number" ? time : 0,
      level: LevelNames.get(Number(level)) ?? String(level),
      msg: typeof msg === "string" ? msg : "",
      sessionKey: typeof sessionKey === "string" ? sessionKey : undefined,
      fields: Object.keys(rest).length === 0 ? "" : JSON.stringify(rest),
    };
  } catch {
    return { seq, timeMs: 0, level: "info", msg: line.trim(), fields: "" };
  }
}
