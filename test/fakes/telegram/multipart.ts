/**
 * A multipart/form-data parser for what grammY sends. grammY writes part headers as
 * `content-disposition:form-data;name="<id>";filename=<name>` with the filename NOT quoted
 * (it may contain spaces), which Node's `Request.formData()` and busboy reject. This parser
 * splits on the boundary, reads `name=` and `filename=` (quoted or not), and keeps the part
 * bytes exactly as sent.
 */

/** One part of a multipart body. `filename` is set only for file parts. */
export interface MultipartPart {
  readonly name: string;
  readonly filename?: string | undefined;
  readonly contentType?: string | undefined;
  readonly data: Buffer;
}

/** Thrown for a body that is not well-formed multipart; the fake answers it with a 400. */
export class MultipartError extends Error {
  override readonly name = "MultipartError";
}

/** The boundary of a `multipart/form-data; boundary=…` content type, or undefined. */
export function boundaryOf(contentType: string | undefined): string | undefined {
  if (contentType === undefined || !/^multipart\/form-data/i.test(contentType)) return undefined;
  const match = /;\s*boundary=("([^"]+)"|[^;\s]+)/i.exec(contentType);
  if (match === null) return undefined;
  return match[2] ?? match[1];
}

const CRLF = Buffer.from("\r\n");
const HEADER_END = Buffer.from("\r\n\r\n");

/** Splits a multipart body into its parts. */
export function parseMultipart(body: Buffer, boundary: string): MultipartPart[] {
  const opening = Buffer.from(`--${boundary}`);
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  if (!body.subarray(0, opening.length).equals(opening)) {
    throw new MultipartError("body does not start with the boundary");
  }
  const parts: MultipartPart[] = [];
  let cursor = opening.length;
  for (;;) {
    if (body.subarray(cursor, cursor + 2).toString("latin1") === "--") return parts;
    if (!body.subarray(cursor, cursor + 2).equals(CRLF)) {
      throw new MultipartError("boundary not followed by CRLF");
    }
    const headerStart = cursor + 2;
    const headerEnd = body.indexOf(HEADER_END, headerStart);
    if (headerEnd === -1) throw new MultipartError("part headers never end");
    const dataStart = headerEnd + HEADER_END.length;
    const next = body.indexOf(delimiter, dataStart);
    if (next === -1) throw new MultipartError("missing closing boundary");
    const headers = parseHeaders(body.subarray(headerStart, headerEnd).toString("utf8"));
    parts.push({ ...headers, data: Buffer.from(body.subarray(dataStart, next)) });
    cursor = next + delimiter.length;
  }
}

function parseHeaders(block: string): Omit<MultipartPart, "data"> {
  let name: string | undefined;
  let filename: string | undefined;
  let contentType: string | undefined;
  for (const line of block.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon === -1) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    // Only leading blanks go: a filename may end in spaces.
    const value = line.slice(colon + 1).replace(/^\s+/, "");
    if (key === "content-type") contentType = value;
    if (key !== "content-disposition") continue;
    // The filename is the last parameter grammY writes and may contain spaces or `;`,
    // so it runs to the end of the line; everything before it holds `name=`.
    const fileAt = value.search(/;\s*filename=/i);
    const head = fileAt === -1 ? value : value.slice(0, fileAt);
    if (fileAt !== -1) {
      const raw = value.slice(value.indexOf("=", fileAt) + 1);
      filename =
        raw.length >= 2 && raw.startsWith('"') && raw.endsWith('"') ? raw.slice(1, -1) : raw;
    }
    const nameMatch = /(?:^|;)\s*name=("([^"]*)"|[^;]*)/i.exec(head);
    if (nameMatch !== null) name = nameMatch[2] ?? nameMatch[1]?.trim();
  }
  if (name === undefined) throw new MultipartError("part without a name");
  return { name, filename, contentType };
}
