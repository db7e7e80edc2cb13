import { DownloadError } from "./download-error.js";

/** The status line and headers of an HTTP/1.1 answer. */
export interface Head {
  readonly status: number;
  /** Header names in lower case; a repeated header's values joined with `, `. */
  readonly headers: Map<string, string>;
}

/** A header line's name (an RFC 9110 token) and value. */
const HeaderLine = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*$/;
const StatusLine = /^HTTP\/1\.[01] ([1-9]\d\d)(?: .*)?$/;

/**
 * Lines (up to LF, without CR LF) read from bytes that arrive in pieces: a line may span any
 * number of them. Latin-1: header bytes are not UTF-8 by rule. A line longer than it may be
 * fails as soon as its bytes pass the bound, before its end arrived, so nothing unbounded is
 * kept.
 */
export class LineReader {
  /** Bytes of a line that spans pieces. */
  #line = "";

  /**
   * Reads `bytes` up to the end of a line: how many it used (all of them when the line goes on
   * past them), and the line once its LF was among them.
   * @param maxBytes the line's bound, CR included
   * @param tooLong the message of the `protocol` error for a line past `maxBytes`
   */
  read(
    bytes: Buffer,
    maxBytes: number,
    tooLong: string,
  ): { readonly used: number; readonly line: string | undefined } {
    const lf = bytes.indexOf(10);
    const end = lf < 0 ? bytes.length : lf;
    if (this.#line.length + end > maxBytes) throw new DownloadError("protocol", tooLong);
    this.#line += bytes.toString("latin1", 0, end);
    if (lf < 0) return { used: end, line: undefined };
    const line = this.#line.endsWith("\r") ? this.#line.slice(0, -1) : this.#line;
    this.#line = "";
    return { used: end + 1, line };
  }
}

/**
 * Reads an answer's head from bytes as they arrive, skipping interim (1xx) answers: a pure,
 * incremental parser (no I/O), fed with {@link push} until it has the head, told of the end
 * of the connection with {@link ended}. Each head (an interim one, the final one) may take
 * `maxHeadBytes` (`Defaults.download.maxHeadBytes`), its line ends counted as two bytes.
 * Everything it throws is a {@link DownloadError}.
 */
export class HeadReader {
  readonly #maxHeadBytes: number;
  readonly #lines = new LineReader();
  /** The lines of the head being read, before its empty line. */
  #head: string[] = [];
  /** Bytes of the head being read, in whole lines. */
  #size = 0;

  constructor(maxHeadBytes: number) {
    this.#maxHeadBytes = maxHeadBytes;
  }

  /**
   * Reads `bytes`: how many it used, and the final answer's head once its empty line was among
   * them. The bytes after that line (the body's) are not used.
   */
  push(bytes: Buffer): { readonly used: number; readonly head: Head | undefined } {
    let used = 0;
    while (used < bytes.length) {
      const read = this.#lines.read(
        bytes.subarray(used),
        this.#maxHeadBytes - this.#size,
        "a head too large",
      );
      used += read.used;
      if (read.line === undefined) continue;
      this.#size += read.line.length + 2;
      if (read.line !== "") {
        this.#head.push(read.line);
        continue;
      }
      const head = parseHead(this.#head);
      this.#head = [];
      this.#size = 0;
      if (head.status >= 200) return { used, head };
      if (head.status === 101) throw new DownloadError("protocol", "an unasked protocol switch");
    }
    return { used, head: undefined };
  }

  /** What failed when the connection ended before the head did. */
  ended(): DownloadError {
    return this.#size === 0
      ? new DownloadError("broken", "the connection closed before an answer")
      : new DownloadError("protocol", "the connection closed inside the answer's head");
  }
}

/** The status line and headers of an answer. */
function parseHead(lines: readonly string[]): Head {
  const status = StatusLine.exec(lines[0] ?? "")?.[1];
  if (status === undefined) throw new DownloadError("protocol", "not an HTTP/1.1 answer");
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const match = HeaderLine.exec(line);
    if (match === null) throw new DownloadError("protocol", "a bad header line");
    const name = (match[1] as string).toLowerCase();
    const value = match[2] as string;
    const before = headers.get(name);
    headers.set(name, before === undefined ? value : `${before}, ${value}`);
  }
  return { status: Number(status), headers };
}
