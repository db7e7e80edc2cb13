import type { IncomingMessage } from "node:http";
import { boundaryOf, MultipartError, type MultipartPart, parseMultipart } from "./multipart.js";
import type { UploadedFile } from "./protocol.js";

/** A body the fake cannot read; answered with a 400. */
export class RequestError extends Error {
  override readonly name = "RequestError";
}

export interface DecodedBody {
  readonly params: Record<string, unknown>;
  /** File parts by part name (the id in `attach://<id>`). */
  readonly parts: ReadonlyMap<string, MultipartPart>;
  readonly multipart: boolean;
}

/** How a body is read: paced like a slow uplink, and watched while it arrives. */
export interface BodyReading {
  /**
   * Bytes per second to read a multipart body at, asked again for every chunk (so a test can
   * lift the limit mid-upload); `undefined` reads at full speed. The sender feels it through
   * TCP back-pressure, as with a slow network.
   */
  readonly multipartBytesPerSecond?: () => number | undefined;
  /** Told the bytes received so far after each chunk of a multipart body. */
  readonly onMultipartProgress?: (receivedBytes: number) => void;
}

async function readAll(
  req: IncomingMessage,
  paced: boolean,
  reading: BodyReading,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of req) {
    const bytes = chunk as Buffer;
    chunks.push(bytes);
    if (!paced) continue;
    received += bytes.length;
    reading.onMultipartProgress?.(received);
    const rate = reading.multipartBytesPerSecond?.();
    if (rate !== undefined && rate > 0) {
      await new Promise((resolve) => setTimeout(resolve, (bytes.length / rate) * 1000));
    }
  }
  return Buffer.concat(chunks);
}

/** JSON objects/arrays inside multipart fields are decoded, as the Bot API does. */
function decodeField(value: string): unknown {
  const first = value.trimStart()[0];
  if (first !== "{" && first !== "[") return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

/** Reads a JSON, multipart or url-encoded body (or none) into params and file parts. */
export async function decodeBody(
  req: IncomingMessage,
  reading: BodyReading = {},
): Promise<DecodedBody> {
  const contentType = req.headers["content-type"];
  const boundary = boundaryOf(contentType);
  const body = await readAll(req, boundary !== undefined, reading);
  const query = Object.fromEntries(new URL(req.url ?? "/", "http://x").searchParams);
  if (boundary !== undefined) {
    let parts: MultipartPart[];
    try {
      parts = parseMultipart(body, boundary);
    } catch (error) {
      if (error instanceof MultipartError) throw new RequestError(`Bad Request: ${error.message}`);
      throw error;
    }
    const params: Record<string, unknown> = { ...query };
    const files = new Map<string, MultipartPart>();
    for (const part of parts) {
      if (part.filename === undefined) params[part.name] = decodeField(part.data.toString("utf8"));
      else files.set(part.name, part);
    }
    return { params, parts: files, multipart: true };
  }
  if (body.length === 0) return { params: query, parts: new Map(), multipart: false };
  if (contentType?.startsWith("application/x-www-form-urlencoded")) {
    const form = Object.fromEntries(new URLSearchParams(body.toString("utf8")));
    const params: Record<string, unknown> = { ...query };
    for (const [key, value] of Object.entries(form)) params[key] = decodeField(value);
    return { params, parts: new Map(), multipart: false };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    throw new RequestError("Bad Request: can't parse JSON body");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new RequestError("Bad Request: JSON body must be an object");
  }
  return {
    params: { ...query, ...(parsed as Record<string, unknown>) },
    parts: new Map(),
    multipart: false,
  };
}

/** Every uploaded part, named by the parameter that references it (`media[i]` in albums). */
export function referencedFiles(
  params: Record<string, unknown>,
  parts: ReadonlyMap<string, MultipartPart>,
): UploadedFile[] {
  const fields = new Map<string, string>();
  const note = (field: string, value: unknown): void => {
    if (typeof value === "string" && value.startsWith("attach://")) {
      fields.set(value.slice("attach://".length), field);
    }
  };
  for (const [key, value] of Object.entries(params)) {
    if (Array.isArray(value)) {
      value.forEach((item: unknown, i) => {
        if (typeof item === "object" && item !== null)
          note(`${key}[${i}]`, (item as { media?: unknown }).media);
      });
    } else {
      note(key, value);
    }
  }
  return [...parts.values()].map((part) => ({
    field: fields.get(part.name) ?? part.name,
    attachId: part.name,
    filename: part.filename,
    bytes: part.data,
  }));
}
