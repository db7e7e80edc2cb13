import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Defaults } from "../defaults.js";
import { DownloadError } from "./download-error.js";
import {
  cuts,
  mutated,
  outcomeOf,
  piecesOf,
  type ReadOptions,
  readAnswer,
  samples,
} from "./http-answer-fuzz.js";

const Max = Defaults.download.maxHeadBytes;
const ringBytes = fc.integer({ min: 1, max: 512 });
const read = (ring: number, maxHeadBytes = Max): ReadOptions => ({ maxHeadBytes, ringBytes: ring });
const latin1 = (text: string) => Buffer.from(text, "latin1");

/** The DownloadError `run` fails with (any other error, or none, fails the test). */
function failureOf(run: () => unknown): DownloadError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(DownloadError);
  return caught as DownloadError;
}

/** Asserts that `bytes` fail with `message`, however they arrive and whatever the ring's size. */
function refusedWherever(bytes: fc.Arbitrary<Buffer>, message: string, maxHeadBytes = Max): void {
  fc.assert(
    fc.property(bytes, cuts(), ringBytes, (answer, at, ring) => {
      const error = failureOf(() => readAnswer(piecesOf(answer, at), read(ring, maxHeadBytes)));
      expect([error.failure, error.message]).toEqual(["protocol", message]);
    }),
    { numRuns: 200 },
  );
}

describe("an answer's head and body framing (generated answers)", () => {
  it("reads every answer whole, however its bytes arrive and whatever the ring's size", () => {
    fc.assert(
      fc.property(samples(), cuts(), ringBytes, (sample, at, ring) => {
        expect(readAnswer(piecesOf(sample.bytes, at), read(ring))).toEqual(sample.expected);
      }),
      { numRuns: 250 },
    );
  });

  it("gives the same bytes with a chunked answer split at every byte boundary", () => {
    const chunked = samples().filter((sample) => sample.framing === "chunked");
    fc.assert(
      fc.property(chunked, ringBytes, (sample, ring) => {
        for (let at = 0; at <= sample.bytes.length; at++) {
          const pieces = [sample.bytes.subarray(0, at), sample.bytes.subarray(at)];
          expect(readAnswer(pieces, read(ring))).toEqual(sample.expected);
        }
      }),
      { numRuns: 25 },
    );
  });

  it("fails an answer cut short as a broken connection, and reads a body without a length up to the cut", () => {
    const cutShort = samples()
      .filter((sample) => sample.end > 0)
      .chain((sample) => fc.tuple(fc.constant(sample), fc.nat({ max: sample.end - 1 })));
    fc.assert(
      fc.property(cutShort, cuts(), ringBytes, ([sample, cut], at, ring) => {
        const pieces = piecesOf(sample.bytes.subarray(0, cut), at);
        if (sample.framing === "close" && cut >= sample.headEnd) {
          const answer = readAnswer(pieces, read(ring));
          expect(answer.body).toEqual(sample.expected.body.subarray(0, cut - sample.headEnd));
          return;
        }
        const error = failureOf(() => readAnswer(pieces, read(ring)));
        if (cut >= sample.headEnd) expect(error.failure).toBe("broken");
        else expect(["broken", "protocol"]).toContain(error.failure);
        if (cut === 0) expect(error.message).toBe("the connection closed before an answer");
      }),
      { numRuns: 400 },
    );
  });

  it("fails only with a DownloadError, the same however the bytes arrive (mutated answers)", () => {
    const bytes = fc.oneof(
      samples().chain((sample) => mutated(sample.bytes)),
      fc.uint8Array({ maxLength: 200 }).map((random) => Buffer.from(random)),
    );
    fc.assert(
      fc.property(bytes, cuts(), cuts(), ringBytes, ringBytes, (answer, a, b, ringA, ringB) => {
        // A small bound, so that heads and lines past it are among the cases.
        const once = outcomeOf(piecesOf(answer, a), read(ringA, 256));
        expect(outcomeOf(piecesOf(answer, b), read(ringB, 256))).toEqual(once);
      }),
      { numRuns: 500 },
    );
  });
});

describe("an answer's lengths and limits", () => {
  it("refuses a content-length that is negative, not a number, too long or in conflict", () => {
    const bad = fc.oneof(
      fc.integer({ min: 1, max: 2 ** 40 }).map((n) => `-${n}`),
      fc.stringMatching(/^[1-9][0-9]{15,24}$/), // 16 digits or more: past what a number holds
      fc.constantFrom("", "abc", "1.5", "0x10", "+5", "1e3", "5 5", "NaN", "Infinity", ",", "5,"),
      fc
        .tuple(fc.nat(), fc.nat())
        .filter(([a, b]) => a !== b)
        .map(([a, b]) => `${a}, ${b}`),
    );
    const answers = fc.oneof(
      bad.map((length) => latin1(`HTTP/1.1 200 OK\r\nContent-Length: ${length}\r\n\r\nbody`)),
      fc
        .tuple(fc.nat(), fc.nat())
        .filter(([a, b]) => a !== b)
        .map(([a, b]) =>
          latin1(`HTTP/1.1 200 OK\r\nContent-Length: ${a}\r\ncontent-length: ${b}\r\n\r\n`),
        ),
    );
    refusedWherever(answers, "a bad content-length");
  });

  it("reads chunked framing over a content-length sent with it, and gives no length", () => {
    const answer = latin1(
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    );
    const { body, length } = readAnswer([answer], read(64));
    expect([body.toString(), length]).toEqual(["hello", undefined]);
  });

  it("refuses a bad chunk size, and a chunk longer than it said", () => {
    const size = fc.oneof(
      fc.constantFrom("", "-1", "zz", "0x5", " 5", "5.0", "+5", "g"),
      fc.stringMatching(/^[0-9a-f]{13,20}$/), // 13 hex digits or more: past 2^48
    );
    const head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    refusedWherever(
      size.map((line) => latin1(`${head}${line}\r\nhello\r\n0\r\n\r\n`)),
      "a bad chunk size",
    );
    const longer = fc
      .tuple(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 20 }))
      .map(([said, extra]) =>
        latin1(`${head}${said.toString(16)}\r\n${"x".repeat(said + extra)}\r\n0\r\n\r\n`),
      );
    refusedWherever(longer, "a chunk longer than it said");
  });

  it("refuses a head past maxHeadBytes, and a line of a chunked body past it, wherever split", () => {
    const bound = fc.integer({ min: 16, max: 1024 });
    const tooLarge = bound.chain((max) =>
      fc.tuple(
        fc.constant(max),
        fc.integer({ min: max, max: 2 * max }).map((n) => `X-Big: ${"a".repeat(n)}`),
        fc.boolean(),
      ),
    );
    fc.assert(
      fc.property(tooLarge, cuts(), ringBytes, ([max, big, interim], at, ring) => {
        const head = interim
          ? `HTTP/1.1 103 Early\r\n${big}\r\n\r\n`
          : `HTTP/1.1 200 OK\r\n${big}\r\n\r\n`;
        const pieces = piecesOf(latin1(`${head}HTTP/1.1 200 OK\r\n\r\n`), at);
        const error = failureOf(() => readAnswer(pieces, read(ring, max)));
        expect([error.failure, error.message]).toEqual(["protocol", "a head too large"]);
      }),
      { numRuns: 200 },
    );
    // The head's bound is also the bound of each line of a chunked body; this head takes 48.
    const longLine = fc.integer({ min: 64, max: 1024 }).map((max) => ({
      max,
      answer: latin1(
        `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=${"e".repeat(max)}\r\nhello\r\n0\r\n\r\n`,
      ),
    }));
    fc.assert(
      fc.property(longLine, cuts(), ringBytes, ({ max, answer }, at, ring) => {
        const error = failureOf(() => readAnswer(piecesOf(answer, at), read(ring, max)));
        expect([error.failure, error.message]).toEqual(["protocol", "a line too long"]);
      }),
      { numRuns: 200 },
    );
  });

  it("refuses a trailer section past maxHeadBytes, however short its lines, wherever split", () => {
    const head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n";
    const trailers = (lines: number) => `${"X-T: v\r\n".repeat(lines)}\r\n`; // 8 bytes a line
    // Each line is far within the bound; together they pass it.
    const endless = fc.integer({ min: 64, max: 1024 }).chain((max) =>
      fc.tuple(
        fc.constant(max),
        fc
          .integer({ min: Math.floor(max / 8) + 1, max: max })
          .map((n) => latin1(`${head}${trailers(n)}`)),
      ),
    );
    fc.assert(
      fc.property(endless, cuts(), ringBytes, ([max, answer], at, ring) => {
        const error = failureOf(() => readAnswer(piecesOf(answer, at), read(ring, max)));
        expect([error.failure, error.message]).toEqual(["protocol", "trailers too large"]);
      }),
      { numRuns: 200 },
    );
    // Within the bound (10 lines, 80 bytes, under 120), they are read past to the body's end.
    const within = readAnswer([latin1(`${head}${trailers(10)}`)], read(64, 120));
    expect(within.body.toString()).toBe("hello");
    const past = failureOf(() => readAnswer([latin1(`${head}${trailers(16)}`)], read(64, 120)));
    expect(past.message).toBe("trailers too large");
  });

  it("gives each interim answer a head's bound of its own, and a close after one no answer", () => {
    const interim = `HTTP/1.1 103 Early Hints\r\nLink: <${"x".repeat(70)}>\r\n\r\n`;
    const final = `HTTP/1.1 200 OK\r\nX-Pad: ${"y".repeat(80)}\r\n\r\n`;
    expect([interim.length, final.length]).toEqual([108, 108]); // each within 120, both not
    const answer = readAnswer([latin1(`${interim}${final}`)], read(64, 120));
    expect(answer.headers.get("x-pad")).toHaveLength(80);
    const cut = failureOf(() => readAnswer([latin1(interim)], read(64, 120)));
    expect([cut.failure, cut.message]).toEqual([
      "broken",
      "the connection closed before an answer",
    ]);
  });

  it("refuses what it does not read: another transfer coding, compression, a protocol switch", () => {
    const answers = [
      [
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "a transfer encoding it does not read (gzip, chunked)",
      ],
      ["HTTP/1.1 200 OK\r\nContent-Encoding: br\r\n\r\n", "a compressed body (br)"],
      [
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
        "an unasked protocol switch",
      ],
      ["HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n", "a bad header line"],
      ["HTTP/2 200\r\n\r\n", "not an HTTP/1.1 answer"],
    ] as const;
    for (const [answer, message] of answers) {
      const error = failureOf(() => readAnswer([latin1(answer)], read(64)));
      expect([error.failure, error.message]).toEqual(["protocol", message]);
    }
  });
});
