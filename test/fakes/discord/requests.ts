import type { IncomingMessage, ServerResponse } from "node:http";

/** One uploaded file of a multipart message create, bytes kept. */
export interface RecordedFile {
  /** Form field name, `files[n]`. */
  readonly field: string;
  readonly filename: string;
  readonly contentType: string;
  readonly bytes: Buffer;
}

/** Every REST call the fake answered, in arrival order. The token is never recorded. */
export interface RecordedCall {
  readonly method: string;
  /** Path below the versioned root, e.g. `/channels/123/messages`. */
  readonly path: string;
  /** The path with ids replaced, e.g. `/channels/:id/messages`. */
  readonly route: string;
  /** The query parameters, e.g. a history page's `after` and `limit`. */
  readonly query: Readonly<Record<string, string>>;
  /** The HTTP status answered; 0 when the connection was dropped instead. */
  readonly status: number;
  /** The JSON body, or the parsed `payload_json` of a multipart body. */
  readonly payload: unknown;
  readonly files: readonly RecordedFile[];
  readonly nonce: string | number | undefined;
  readonly enforceNonce: boolean;
  /** The injected failure that answered this call, if any. */
  readonly injected: FailureKind | undefined;
  /** Id of the message this call created or, for a repeated nonce, returned again. */
  readonly messageId: string | undefined;
  /** True when a repeated nonce returned the earlier message instead of posting. */
  readonly deduplicated: boolean;
}

export type FailureKind =
  | "rate_limit"
  | "server_error"
  | "server_error_after_processing"
  | "client_error"
  | "connection_drop_after_processing";

/**
 * A failure the next matching calls get. `server_error_after_processing` creates the message
 * and then answers 5xx, like a Discord edge that timed out after the write;
 * `connection_drop_after_processing` creates it and closes the socket without an answer;
 * `client_error` is a 400 Invalid Form Body (nothing created).
 */
export interface FailureInjection {
  readonly kind: FailureKind;
  /** Default `POST`. */
  readonly method?: string;
  /** Default: message creates, `/channels/<id>/messages`. */
  readonly path?: RegExp;
  /** How many matching calls fail (default 1). */
  readonly times?: number;
  /** For `rate_limit` (default 0.2). */
  readonly retryAfterSeconds?: number;
  /** For the 5xx kinds (default 500) and `client_error` (default 400). */
  readonly status?: number;
}

export interface ParsedBody {
  readonly payload: unknown;
  readonly files: RecordedFile[];
}

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** JSON or multipart (`payload_json` + `files[n]`), parsed with the platform's FormData. */
export async function parseBody(req: IncomingMessage, body: Buffer): Promise<ParsedBody> {
  const contentType = req.headers["content-type"] ?? "";
  if (body.length === 0) return { payload: undefined, files: [] };
  if (contentType.startsWith("multipart/form-data")) {
    const form = await new Response(body, { headers: { "content-type": contentType } }).formData();
    const files: RecordedFile[] = [];
    let payload: unknown;
    for (const [field, value] of form.entries()) {
      if (typeof value === "string") {
        if (field === "payload_json") payload = JSON.parse(value);
        continue;
      }
      files.push({
        field,
        filename: value.name,
        contentType: value.type,
        bytes: Buffer.from(await value.arrayBuffer()),
      });
    }
    return { payload, files };
  }
  return { payload: JSON.parse(body.toString("utf8")), files: [] };
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Discord's error body: `{ code, message }` plus field errors for 50035. */
export function discordError(code: number, message: string): { code: number; message: string } {
  return { code, message };
}

export function routeOf(path: string): string {
  return path
    .replace(/\/interaction-token-\d+(?=\/|$)/g, "/:token")
    .replace("/%40original", "/@original")
    .replace(/\/\d{5,}(?=\/|$)/g, "/:id");
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
