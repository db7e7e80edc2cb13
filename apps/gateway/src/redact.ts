/**
 * The gateway's one redaction module: every start-up error, `doctor` line, log line and
 * channel failure that could carry a secret passes through a {@link Redactor} (or
 * {@link redactText}) before it is printed. Which values of a config are secret is decided in
 * `config/secrets.ts`; this module only knows how to cut them out of text and values.
 */

/** What a removed secret is replaced with. */
export const Redacted = "<redacted>";

/** Shorter values are not cut out of text: they would mangle ordinary words. */
const MinSecretLength = 6;
const MaxScrubDepth = 6;

/** Secrets recognised by their shape wherever they appear, whether registered or not. */
const Patterns: readonly { readonly pattern: RegExp; readonly replacement: string }[] = [
  // The token segment of Telegram Bot API URLs: `/bot123456:AA…/method` (also `/file/bot…`).
  { pattern: /\/bot\d+:[A-Za-z0-9_-]+/g, replacement: `/bot${Redacted}` },
  // Credentials in a URL: `scheme://user:password@host`.
  { pattern: /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]+@/gi, replacement: `$1${Redacted}@` },
  // An Authorization header's credentials (`authorization: Bot …`, `"Authorization":"Bearer …"`).
  {
    pattern: /\b(authorization["']?\s*[:=]\s*["']?)((?:Bearer|Bot|Basic)\s+)?[^\s"',]+/gi,
    replacement: `$1$2${Redacted}`,
  },
  // A bearer credential on its own.
  { pattern: /\bBearer\s+[A-Za-z0-9._~+/=-]{16,}/g, replacement: `Bearer ${Redacted}` },
];

/**
 * Shapes credentials are issued in, matched against a whole value: a Telegram bot token
 * (`123456789:AA…`), a Discord bot token (three base64url parts joined by dots, a JWT too), an
 * API key with a vendor prefix (`sk-…`, `ghp_…`, `xoxb-…`), and a long run of letters and
 * digits mixing cases (how generated keys look; no name or word is written so).
 */
const TokenShapes: readonly RegExp[] = [
  /^\d{5,}:[A-Za-z0-9_-]{30,}$/,
  /^[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{20,}$/,
  /^(?:sk|pk|rk|xox[abprs]|ghp|gho|ghs|github_pat|glpat)[-_][A-Za-z0-9_-]{16,}$/,
];
const MinGeneratedLength = 32;

/**
 * Whether `value` looks like a credential (see {@link TokenShapes}), whatever key it was found
 * under: a token pasted under `name:` is still a token. Config errors never show such a value,
 * and the config's redactor learns it.
 */
export function looksLikeToken(value: string): boolean {
  const text = value.trim();
  if (TokenShapes.some((shape) => shape.test(text))) return true;
  return (
    text.length >= MinGeneratedLength &&
    /^[A-Za-z0-9_-]+$/.test(text) &&
    /\d/.test(text) &&
    /[a-z]/.test(text) &&
    /[A-Z]/.test(text)
  );
}

/**
 * Cuts secrets out of text and values: every registered secret (bot tokens, API keys, any
 * value of the raw config that is not a known non-secret setting) and the shapes in
 * {@link Patterns}. Secrets can be added after creation (the config is read after the CLI
 * made its redactor); everything scrubbed afterwards sees them.
 */
export class Redactor {
  /** Longest first, so a secret that contains another is cut whole. */
  #secrets: string[] = [];

  constructor(secrets: readonly string[] = []) {
    this.add(secrets);
  }

  /** Registers secret values; values shorter than 6 characters are ignored. */
  add(secrets: readonly string[]): this {
    const all = new Set(this.#secrets);
    for (const secret of secrets) if (secret.length >= MinSecretLength) all.add(secret);
    this.#secrets = [...all].sort((a, b) => b.length - a.length);
    return this;
  }

  /** `text` without any registered secret or secret-shaped fragment. */
  text(text: string): string {
    let out = text;
    for (const secret of this.#secrets) {
      if (out.includes(secret)) out = out.split(secret).join(Redacted);
    }
    for (const { pattern, replacement } of Patterns) out = out.replace(pattern, replacement);
    return out;
  }

  /**
   * A copy of `value` with every string in it scrubbed (object fields, array items, an error's
   * name, message, stack, cause and own fields), `MaxScrubDepth` levels deep. Errors keep their
   * class, so loggers still name them.
   */
  value(value: unknown): unknown {
    return this.#scrub(value, 0);
  }

  #scrub(value: unknown, depth: number): unknown {
    if (typeof value === "string") return this.text(value);
    if (depth >= MaxScrubDepth || value === null || typeof value !== "object") return value;
    if (value instanceof Error) {
      const copy = Object.create(Object.getPrototypeOf(value) as object) as Error;
      for (const key of ["name", "message", "stack"] as const) {
        const text = value[key];
        if (text !== undefined) {
          Object.defineProperty(copy, key, { value: this.text(text), writable: true });
        }
      }
      if (value.cause !== undefined) copy.cause = this.#scrub(value.cause, depth + 1);
      for (const [key, v] of Object.entries(value)) {
        (copy as unknown as Record<string, unknown>)[key] = this.#scrub(v, depth + 1);
      }
      return copy;
    }
    if (Array.isArray(value)) return value.map((v) => this.#scrub(v, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) out[key] = this.#scrub(v, depth + 1);
    return out;
  }
}

/** `text` with `secrets` and secret-shaped fragments (bot URL tokens, URL passwords) removed. */
export function redactText(text: string, secrets: readonly string[] = []): string {
  return new Redactor(secrets).text(text);
}
