import ms from "ms";

/**
 * Parses a duration an operator types (`90s`, `30m`, `2h`, `1d`, `1.5h`; `ms` grammar) into
 * whole seconds. A bare number is refused: `ms` would read `30` as 30 milliseconds, which is
 * never what someone reaping containers means. Throws a RangeError that says what to write.
 */
export function parseDurationSeconds(text: string): number {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    throw new RangeError(
      `"${text}" has no unit: write e.g. ${trimmed}m, ${trimmed}h or ${trimmed}d`,
    );
  }
  // `ms` answers undefined (despite its types) for text it cannot read.
  const millis: number | undefined = /^\d/.test(trimmed)
    ? ms(trimmed as ms.StringValue)
    : undefined;
  if (millis === undefined || !Number.isFinite(millis) || millis < 0) {
    throw new RangeError(`"${text}" is not a duration: write e.g. 90s, 30m, 2h or 1d`);
  }
  return Math.round(millis / 1000);
}

const Units = [
  ["day", 86_400],
  ["hour", 3_600],
  ["minute", 60],
] as const;

/**
 * Whole seconds as an operator reads them, exactly (`ms`'s long form rounds 90 minutes to
 * "2 hours"): the largest unit that divides it, `90 minutes`, `2 hours`, `45 seconds`.
 */
export function formatDuration(seconds: number): string {
  const [unit, size] = Units.find(([, size]) => seconds > 0 && seconds % size === 0) ?? [
    "second",
    1,
  ];
  const count = seconds / size;
  return `${count} ${unit}${count === 1 ? "" : "s"}`;
}
