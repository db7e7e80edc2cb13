/** Wire shapes of the Bot API as the fake speaks them. */

export interface ResponseParameters {
  readonly retry_after?: number;
  readonly migrate_to_chat_id?: number;
}

export type ApiResponse =
  | { readonly ok: true; readonly result: unknown }
  | {
      readonly ok: false;
      readonly error_code: number;
      readonly description: string;
      readonly parameters?: ResponseParameters;
    };

/** What the fake answers: an HTTP status and a JSON body, or a raw (non-JSON) body. */
export interface ApiAnswer {
  readonly status: number;
  readonly body: ApiResponse | { readonly raw: string; readonly contentType: string };
}

/** A file that arrived in a multipart upload. */
export interface UploadedFile {
  /**
   * The parameter that referenced it: `document`, `photo`, … for single sends,
   * `media[<index>]` for an album item. The part name itself if nothing referenced it.
   */
  readonly field: string;
  /** The id in `attach://<id>` (the multipart part name). */
  readonly attachId: string;
  /** The filename from the part header, unquoted, spaces kept. */
  readonly filename: string | undefined;
  readonly bytes: Buffer;
}

export const ok = (result: unknown): ApiAnswer => ({ status: 200, body: { ok: true, result } });

export const fail = (
  status: number,
  description: string,
  parameters?: ResponseParameters,
): ApiAnswer => ({
  status,
  body:
    parameters === undefined
      ? { ok: false, error_code: status, description }
      : { ok: false, error_code: status, description, parameters },
});
