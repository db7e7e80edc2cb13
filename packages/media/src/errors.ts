/** A `TranslateContext` field that cannot work, named so the caller can fix its config. */
export class MediaConfigError extends Error {
  override readonly name = "MediaConfigError";

  constructor(
    readonly field: string,
    readonly value: unknown,
    expected: string,
  ) {
    super(`media context ${field} = ${JSON.stringify(value)}: expected ${expected}`);
  }
}
