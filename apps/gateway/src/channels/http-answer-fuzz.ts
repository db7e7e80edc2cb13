/**
 * Generated HTTP/1.1 answers and a reader that parses them as an `Exchange` does, without
 * a socket: shared by the property tests (`http-answer.test.ts`) and the long-running fuzzer
 * (`fuzz-download.ts`, `pnpm fuzz:download`). Never imported by the gateway itself.
 */
import { ByteRing } from "@mediagate/io";
import fc from "fast-check";
import { DownloadError } from "./download-error.js";
import { BodyReader } from "./http-answer-body.js";
import { type Head, HeadReader } from "./http-answer-head.js";

/** What reading a whole answer gave. */
export interface Answer {
  readonly status: number;
  readonly headers: ReadonlyMap<string, string>;
  readonly length: number | undefined;
  readonly body: Buffer;
}

/** How {@link readAnswer} reads: the exchange's bounds, made small to reach their edges. */
export interface ReadOptions {
  readonly maxHeadBytes: number;
  /** The ring's starting size (it grows when a piece does not fit, as with TLS). */
  readonly ringBytes: number;
}

/**
 * Reads an answer that arrives as `pieces` (one socket read each, then the end of the
 * connection) the way `Exchange` (`http-exchange.ts`) does: into a ring, the head through a
 * {@link HeadReader}, the body through a {@link BodyReader}, each body piece held while more
 * arrives. Throws the {@link DownloadError} the exchange would fail with; any other error is a
 * bug (a piece written over while held, a step that made no progress: a hang).
 */
export function readAnswer(pieces: readonly Buffer[], options: ReadOptions): Answer {
  const ring = new ByteRing(options.ringBytes);
  let next = 0;
  /** What the socket reads before it pauses (the ring too full for the next read). */
  const arrive = () => {
    for (let piece = pieces[next]; piece !== undefined; piece = pieces[next]) {
      if (ring.pending > 0 && piece.length > ring.free) return;
      ring.push(piece, piece.length);
      next++;
    }
  };
  const more = () => {
    arrive();
    return ring.pending > 0;
  };
  const heads = new HeadReader(options.maxHeadBytes);
  let head: Head | undefined;
  while (head === undefined) {
    if (!more()) throw heads.ended();
    const read = heads.push(ring.peek());
    if (read.used === 0 && read.head === undefined) throw new Error("the head made no progress");
    ring.skip(read.used);
    head = read.head;
  }
  const body = new BodyReader(head, options.maxHeadBytes);
  const chunks: Buffer[] = [];
  let held: { view: Buffer; copy: Buffer } | undefined;
  for (;;) {
    arrive(); // while the reader held its piece
    if (held !== undefined && !held.view.equals(held.copy)) {
      throw new Error("a piece the reader held was written over");
    }
    ring.release();
    held = undefined;
    if (body.done) break;
    if (!more()) {
      const error = body.ended();
      if (error !== undefined) throw error;
      break;
    }
    const { skip, data } = body.step(ring.peek());
    if (skip + data === 0) throw new Error("the body made no progress");
    ring.skip(skip);
    if (data > 0) {
      const view = ring.take(data);
      held = { view, copy: Buffer.from(view) };
      chunks.push(held.copy);
    }
  }
  const { status, headers } = head;
  return { status, headers, length: body.length, body: Buffer.concat(chunks) };
}

/** An answer's outcome: what it gave, or the failure and message of its DownloadError. */
export type Outcome = Answer | { readonly failure: string; readonly message: string };

/** {@link readAnswer}, with a {@link DownloadError} as a value; any other error is thrown. */
export function outcomeOf(pieces: readonly Buffer[], options: ReadOptions): Outcome {
  try {
    return readAnswer(pieces, options);
  } catch (error) {
    if (!(error instanceof DownloadError)) throw error;
    return { failure: error.failure, message: error.message };
  }
}

/** Where to cut an answer: at these places (each taken modulo its length), or at every byte. */
export type Cuts = readonly number[] | "every byte";

/** `bytes` cut at `cuts`: the pieces in which they arrive. */
export function piecesOf(bytes: Buffer, cuts: Cuts): Buffer[] {
  if (cuts === "every byte") return Array.from(bytes, (_, i) => bytes.subarray(i, i + 1));
  const at = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const cut of [...at, bytes.length]) {
    if (cut > from) pieces.push(bytes.subarray(from, cut));
    from = Math.max(from, cut);
  }
  return pieces;
}

/** {@link Cuts}: none, a few, or every byte (a slow drip). */
export function cuts(): fc.Arbitrary<Cuts> {
  return fc.oneof(fc.array(fc.nat(), { maxLength: 12 }), fc.constant("every byte" as const));
}

/** A generated answer and what reading it must give. */
export interface Sample {
  readonly bytes: Buffer;
  readonly expected: Answer;
  readonly framing: "length" | "chunked" | "close" | "none";
  /** Where the final answer's head ends. */
  readonly headEnd: number;
  /** Where its body's framing ends (what follows is never read). */
  readonly end: number;
}

const TokenChars = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const Reserved = new Set(["content-length", "transfer-encoding", "content-encoding"]);
const token = fc.string({ unit: fc.constantFrom(...TokenChars), minLength: 1, maxLength: 10 });
/** A field value: visible ASCII, Latin-1 bytes and inner blanks; trimmed (the parser trims). */
const value = fc
  .string({
    unit: fc.oneof(
      fc.constantFrom(" ", "\t"),
      fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
      fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)),
    ),
    maxLength: 24,
  })
  .map((text) => text.replace(/^[ \t]+|[ \t]+$/g, ""));
const blank: fc.Arbitrary<string> = fc.constantFrom("", " ", "\t", " \t ");
const field = fc.record({ name: token, value, before: blank, after: blank });
const fields = fc.array(
  field.filter(({ name }) => !Reserved.has(name.toLowerCase())),
  { maxLength: 4 },
);
type Field = { name: string; value: string; before: string; after: string };

/** Every shape of answer the client reads, with its interim answers and bytes after its end. */
export function samples(): fc.Arbitrary<Sample> {
  return fc
    .record({
      framing: fc.constantFrom("length", "chunked", "close", "none" as const),
      status: fc.integer({ min: 200, max: 599 }).filter((s) => s !== 204 && s !== 304),
      noBody: fc.constantFrom(204, 304),
      reason: fc.string({ unit: "grapheme-ascii", maxLength: 12 }),
      interim: fc.array(fc.record({ status: fc.constantFrom(100, 102, 103), fields }), {
        maxLength: 2,
      }),
      fields,
      at: fc.nat(),
      ends: fc.array(fc.constantFrom("\r\n", "\n"), { minLength: 1, maxLength: 6 }),
      body: fc.uint8Array({ maxLength: 300 }),
      lengthForm: fc.constantFrom("once", "listed", "twice"),
      chunkedName: fc.constantFrom("chunked", "Chunked", "CHUNKED"),
      alsoLength: fc.option(fc.nat({ max: 99_999 }), { nil: undefined }),
      chunkCuts: fc.array(fc.nat(), { maxLength: 6 }),
      sizeForms: fc.array(
        fc.record({
          upper: fc.boolean(),
          zeros: fc.nat({ max: 3 }),
          extension: fc.option(fc.tuple(blank, token, fc.option(token, { nil: undefined })), {
            nil: undefined,
          }),
        }),
        { minLength: 1, maxLength: 4 },
      ),
      trailers: fields,
      after: fc.uint8Array({ maxLength: 16 }),
    })
    .map((choice) => {
      let line = 0;
      const end = () => choice.ends[line++ % choice.ends.length] as string;
      const headOf = (status: number, list: readonly Field[]) =>
        `HTTP/1.1 ${status}${choice.reason === "" ? "" : ` ${choice.reason}`}${end()}${fieldLines(list, end)}${end()}`;
      const framingFields: Field[] = [];
      const add = (name: string, text: string) =>
        framingFields.push({ name, value: text, before: " ", after: "" });
      const { framing, body } = choice;
      if (framing === "length") {
        const n = String(body.length);
        if (choice.lengthForm === "listed") add("Content-Length", `${n}, ${n}`);
        else add("content-length", n);
        if (choice.lengthForm === "twice") add("CONTENT-LENGTH", n);
      } else if (framing === "chunked") {
        add("Transfer-Encoding", choice.chunkedName);
        if (choice.alsoLength !== undefined) add("Content-Length", String(choice.alsoLength));
      } else if (framing === "none" && choice.alsoLength !== undefined) {
        add("Content-Length", String(choice.alsoLength));
      }
      const list = [...choice.fields];
      list.splice(choice.at % (list.length + 1), 0, ...framingFields);
      const status = framing === "none" ? choice.noBody : choice.status;
      const interim = choice.interim.map((answer) => headOf(answer.status, answer.fields));
      const head = Buffer.from(`${interim.join("")}${headOf(status, list)}`, "latin1");
      let framed: Buffer;
      if (framing === "chunked") {
        framed = chunked(
          Buffer.from(body),
          choice.chunkCuts,
          choice.sizeForms,
          choice.trailers,
          end,
        );
      } else if (framing === "none") {
        framed = Buffer.alloc(0);
      } else {
        framed = Buffer.from(body);
      }
      const after = framing === "close" ? Buffer.alloc(0) : Buffer.from(choice.after);
      return {
        bytes: Buffer.concat([head, framed, after]),
        expected: {
          status,
          headers: headersOf(list),
          length: framing === "length" ? body.length : undefined,
          body: framing === "none" ? Buffer.alloc(0) : Buffer.from(body),
        },
        framing,
        headEnd: head.length,
        end: head.length + framed.length,
      };
    });
}

function fieldLines(list: readonly Field[], end: () => string): string {
  return list.map((f) => `${f.name}:${f.before}${f.value}${f.after}${end()}`).join("");
}

/** The header map the parser makes of `list`: lower-case names, repeated values joined. */
function headersOf(list: readonly Field[]): Map<string, string> {
  const headers = new Map<string, string>();
  for (const { name, value } of list) {
    const key = name.toLowerCase();
    const before = headers.get(key);
    headers.set(key, before === undefined ? value : `${before}, ${value}`);
  }
  return headers;
}

type SizeForm = {
  upper: boolean;
  zeros: number;
  extension: [string, string, string | undefined] | undefined;
};

/** `body` in chunked transfer coding, cut at `at`, size lines written in `forms` in turn. */
function chunked(
  body: Buffer,
  at: readonly number[],
  forms: readonly SizeForm[],
  trailers: readonly Field[],
  end: () => string,
): Buffer {
  const parts: Buffer[] = [];
  const sizeLine = (size: number, i: number) => {
    const form = forms[i % forms.length] as SizeForm;
    const hex = size.toString(16);
    const digits = `${"0".repeat(form.zeros)}${form.upper ? hex.toUpperCase() : hex}`;
    const [blanks, name, text] = form.extension ?? [];
    const extension =
      name === undefined ? "" : `${blanks};${name}${text === undefined ? "" : `=${text}`}`;
    return `${digits}${extension}${end()}`;
  };
  const pieces = piecesOf(body, at);
  pieces.forEach((piece, i) => {
    parts.push(Buffer.from(sizeLine(piece.length, i), "latin1"), piece, Buffer.from(end()));
  });
  parts.push(
    Buffer.from(`${sizeLine(0, pieces.length)}${fieldLines(trailers, end)}${end()}`, "latin1"),
  );
  return Buffer.concat(parts);
}

/** One change to an answer's bytes, at a place taken modulo its length. */
const mutation = fc.oneof(
  fc.record({ set: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({
    insert: fc.nat(),
    bytes: fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 8 }),
      fc
        .constantFrom("\r\n", "\n", "\r", ":", ";", " ", "0\r\n\r\n", "-1", "ffffffffffffff", ",")
        .map((text) => Buffer.from(text, "latin1")),
    ),
  }),
  fc.record({ remove: fc.nat(), length: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ repeat: fc.nat(), length: fc.integer({ min: 1, max: 16 }) }),
);

/** `bytes` with a few random changes: a byte set, bytes inserted, removed or repeated. */
export function mutated(bytes: Buffer): fc.Arbitrary<Buffer> {
  return fc.array(mutation, { minLength: 1, maxLength: 4 }).map((changes) => {
    let out = Buffer.from(bytes);
    for (const change of changes) {
      const at = (n: number) => n % (out.length + 1);
      if ("set" in change) {
        if (out.length > 0) out[change.set % out.length] = change.byte;
      } else if ("insert" in change) {
        const i = at(change.insert);
        out = Buffer.concat([out.subarray(0, i), change.bytes, out.subarray(i)]);
      } else if ("remove" in change) {
        const i = at(change.remove);
        out = Buffer.concat([out.subarray(0, i), out.subarray(i + change.length)]);
      } else {
        const i = at(change.repeat);
        const part = out.subarray(i, i + change.length);
        out = Buffer.concat([out.subarray(0, i), part, out.subarray(i)]);
      }
    }
    return out;
  });
}
