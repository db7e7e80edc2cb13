const BACKTICK = 0x60;

/** The backtick runs of one line; `next[i]` is the next run of equal length (its closer) or -1. */
export interface BacktickRuns {
  readonly count: number;
  readonly starts: Int32Array;
  readonly ends: Int32Array;
  readonly next: Int32Array;
}

/** Runs of `[from, end)`, each paired with its closer by one right-to-left pass. */
export function backtickRuns(text: string, from: number, end: number): BacktickRuns {
  // Runs are separated by at least one other character.
  const capacity = ((end - from) >> 1) + 1;
  const starts = new Int32Array(capacity);
  const ends = new Int32Array(capacity);
  let count = 0;
  let p = from;
  while (p < end) {
    if (text.charCodeAt(p) !== BACKTICK) {
      p++;
      continue;
    }
    starts[count] = p;
    while (p < end && text.charCodeAt(p) === BACKTICK) p++;
    ends[count++] = p;
  }
  const next = new Int32Array(count);
  const short = new Int32Array(16).fill(-1);
  const long = new Map<number, number>();
  for (let i = count - 1; i >= 0; i--) {
    const length = ends[i]! - starts[i]!;
    if (length < 16) {
      next[i] = short[length]!;
      short[length] = i;
    } else {
      next[i] = long.get(length) ?? -1;
      long.set(length, i);
    }
  }
  return { count, starts, ends, next };
}
