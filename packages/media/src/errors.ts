import { MediagateError } from "@mediagate/io";
/** A `TranslateContext` field that cannot work, named so the caller can fix its config. */
export class MediaConfigError extends MediagateError {
  override readonly name = "MediaConfigError";
  readonly code = "MG_MEDIA_CONFIG_INVALID";

  constructor(
    readonly field: string,
    readonly value: unknown,
    expected: string,
  ) {
    super(`media context ${field} = ${JSON.stringify(value)}: expected ${expected}`);
  }
}
