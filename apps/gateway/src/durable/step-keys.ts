/**
 * The grammar of delivery step keys: the names under which the outbox records each step of a
 * reply (`outbox_steps.step` in the journal), and from which Discord derives each create's
 * nonce. Keys in existing journals must keep parsing and a resumed Discord delivery must derive
 * the first attempt's nonces, so a key's string never changes; new kinds may be added.
 *
 * - `text:<n>`: the n-th (from 0) part of the reply text, a chunk or a long reply's
 *   `reply.txt`. A text sent as a caption has no key of its own: it is part 0.
 * - `media:<path>`: a ready file (each item of an album has its own, with the album's result).
 * - `notice:<n>`: the n-th chunk of Discord's notice for files over the chat's limit; it names
 *   the chunk's nonce and is never recorded.
 * - `notices:<name>`: the outbox's own notice `name`, recorded once it is done.
 * - `notices:<name>/<key>`: a step of that notice's delivery (`notices:plan/text:0`).
 * - `given_up`: the outbox gives the reply up (recorded before that notice goes out).
 */

/** The outbox's own notices, each delivered once per reply. */
export type OutboxNoticeName =
  /** Files the plan could not make ready (denied, unreachable, too large). */
  | "plan"
  /** Files the platform did not take, or may not have. */
  | "delivery"
  /** The reply was given up. */
  | "given_up";

/** A step key, parsed. */
export type StepKey =
  | { readonly kind: "text"; readonly index: number }
  | { readonly kind: "media"; readonly path: string }
  | { readonly kind: "notice"; readonly index: number }
  | { readonly kind: "outboxNotice"; readonly name: OutboxNoticeName }
  | { readonly kind: "outboxNoticeStep"; readonly name: OutboxNoticeName; readonly step: StepKey }
  | { readonly kind: "givenUp" };

const OutboxNoticeNames: Readonly<Record<OutboxNoticeName, true>> = {
  plan: true,
  delivery: true,
  given_up: true,
};

const GivenUpKey = "given_up";

/** A part index: a non-negative integer, in decimal without leading zeros. */
const IndexPattern = /^(?:0|[1-9][0-9]*)$/;

function formatIndex(index: number): string {
  if (!Number.isSafeInteger(index) || index < 0)
    throw new RangeError(`a step index is a non-negative integer, got ${index}`);
  return String(index);
}

function parseIndex(text: string): number | undefined {
  if (!IndexPattern.test(text)) return undefined;
  const index = Number(text);
  return Number.isSafeInteger(index) ? index : undefined;
}

function isOutboxNoticeName(text: string): text is OutboxNoticeName {
  return Object.hasOwn(OutboxNoticeNames, text);
}

/** The key of a step. Throws a `RangeError` for an index that is not a non-negative integer. */
export function formatStepKey(key: StepKey): string {
  switch (key.kind) {
    case "text":
      return `text:${formatIndex(key.index)}`;
    case "media":
      return `media:${key.path}`;
    case "notice":
      return `notice:${formatIndex(key.index)}`;
    case "outboxNotice":
      return `notices:${key.name}`;
    case "outboxNoticeStep":
      return `notices:${key.name}/${formatStepKey(key.step)}`;
    case "givenUp":
      return GivenUpKey;
  }
}

/**
 * The step a key names, or undefined for a string no version of the gateway records (a key
 * of a later version is left alone, not misread). `parseStepKey(formatStepKey(k))` is `k`.
 */
export function parseStepKey(raw: string): StepKey | undefined {
  if (raw === GivenUpKey) return { kind: "givenUp" };
  const colon = raw.indexOf(":");
  if (colon < 0) return undefined;
  const rest = raw.slice(colon + 1);
  switch (raw.slice(0, colon)) {
    case "text": {
      const index = parseIndex(rest);
      return index === undefined ? undefined : { kind: "text", index };
    }
    case "media":
      return { kind: "media", path: rest };
    case "notice": {
      const index = parseIndex(rest);
      return index === undefined ? undefined : { kind: "notice", index };
    }
    case "notices": {
      const slash = rest.indexOf("/");
      const name = slash < 0 ? rest : rest.slice(0, slash);
      if (!isOutboxNoticeName(name)) return undefined;
      if (slash < 0) return { kind: "outboxNotice", name };
      const step = parseStepKey(rest.slice(slash + 1));
      return step === undefined ? undefined : { kind: "outboxNoticeStep", name, step };
    }
    default:
      return undefined;
  }
}

/** The key of the reply text's n-th part (`text:<n>`). */
export function textStepKey(index: number): string {
  return formatStepKey({ kind: "text", index });
}

/** The key of a ready file (`media:<path>`). */
export function mediaStepKey(path: string): string {
  return formatStepKey({ kind: "media", path });
}

/** Whether `raw` is the key of a part of the reply's own text (not of a notice's). */
export function isTextStepKey(raw: string): boolean {
  return parseStepKey(raw)?.kind === "text";
}
