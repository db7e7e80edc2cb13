const Rfc3339 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Parses a Docker timestamp such as `2024-05-01T12:00:00.123456789Z` (RFC 3339 with up to
 * nanoseconds, which `Date.parse` does not accept reliably). Returns `undefined` for an
 * unparseable value and for Docker's zero time `0001-01-01T00:00:00Z` (never finished).
 */
export function parseDockerTime(value: unknown): Date | undefined {
  if (typeof value !== "string") return undefined;
  const match = Rfc3339.exec(value.trim());
  if (match === null) return undefined;
  const [, year, month, day, hour, minute, second, fraction = "", zone = "Z"] = match;
  if (Number(year) <= 1) return undefined;
  const millis = fraction.padEnd(3, "0").slice(0, 3);
  const iso = `${year}-${month}-${day}T${hour}:${minute}:${second}.${millis}${zone}`;
  const time = Date.parse(iso);
  return Number.isNaN(time) ? undefined : new Date(time);
}
