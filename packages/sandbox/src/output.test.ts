import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FrameDecoder } from "./frames.js";
import { MarkerScanner, OutputBuffer } from "./output.js";

function frame(type: number, payload: string): Buffer {
  const body = Buffer.from(payload);
  const header = Buffer.alloc(8);
  header[0] = type;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

function splitAt(buffer: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (buffer.length + 1)))].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let from = 0;
  for (const point of points) {
    parts.push(buffer.subarray(from, point));
    from = point;
  }
  parts.push(buffer.subarray(from));
  return parts;
}

describe("FrameDecoder", () => {
  it("separates stdout and stderr however the stream is chunked", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(1, 2), fc.string({ maxLength: 30 }))),
        fc.array(fc.nat()),
        (frames, cuts) => {
          const wire = Buffer.concat(frames.map(([type, text]) => frame(type, text)));
          const got = { 1: "", 2: "" } as Record<number, string>;
          const decoder = new FrameDecoder((type, payload) => {
            got[type] += payload.toString();
          });
          for (const part of splitAt(wire, cuts)) decoder.push(part);
          expect(got[1]).toBe(
            frames
              .filter(([t]) => t === 1)
              .map(([, s]) => s)
              .join(""),
          );
          expect(got[2]).toBe(
            frames
              .filter(([t]) => t === 2)
              .map(([, s]) => s)
              .join(""),
          );
        },
      ),
    );
  });
});

describe("OutputBuffer", () => {
  it("keeps the first cap bytes and flags the rest", () => {
    const out = new OutputBuffer(5);
    out.push(Buffer.from("abc"));
    out.push(Buffer.from("defg"));
    out.push(Buffer.from("h"));
    expect(out.text()).toBe("abcde");
    expect(out.truncated).toBe(true);
  });

  it("is not truncated when output fits exactly", () => {
    const out = new OutputBuffer(3);
    out.push(Buffer.from("abc"));
    expect(out.text()).toBe("abc");
    expect(out.truncated).toBe(false);
  });
});

describe("MarkerScanner", () => {
  it("finds a marker split across chunks and reads its trailer", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 50 }), fc.array(fc.nat()), (before, cuts) => {
        fc.pre(!before.includes("@@END@@"));
        let seen = "";
        const scanner = new MarkerScanner("@@END@@", (chunk) => {
          seen += chunk.toString("latin1");
        });
        const wire = Buffer.from(`${before}@@END@@42\nstray`, "latin1");
        for (const part of splitAt(wire, cuts)) scanner.push(part);
        expect(scanner.done).toBe(true);
        expect(scanner.trailer).toBe("42");
        expect(seen).toBe(Buffer.from(before, "latin1").toString("latin1"));
      }),
    );
  });

  it("passes bytes that cannot start a marker at once, holding back only a possible start", () => {
    const seen: string[] = [];
    const scanner = new MarkerScanner("@@END@@", (chunk) => seen.push(chunk.toString()));
    scanner.push(Buffer.from("first\n"));
    expect(seen.join("")).toBe("first\n");
    scanner.push(Buffer.from("second @@E"));
    expect(seen.join("")).toBe("first\nsecond ");
    scanner.push(Buffer.from("x"));
    expect(seen.join("")).toBe("first\nsecond @@Ex");
  });

  it("flushes held bytes when the stream ends without a marker", () => {
    let seen = "";
    const scanner = new MarkerScanner("@@END@@", (chunk) => {
      seen += chunk.toString();
    });
    scanner.push(Buffer.from("partial @@EN"));
    expect(scanner.done).toBe(false);
    scanner.flush();
    expect(seen).toBe("partial @@EN");
  });
});

describe("OutputBuffer's listener", () => {
  it("is told exactly the bytes kept, in order, and none past the cap", () => {
    const told: string[] = [];
    const buffer = new OutputBuffer(8, (chunk) => told.push(chunk.toString()));
    for (const piece of ["abc", "", "defgh", "ijk"]) buffer.push(Buffer.from(piece));
    expect(told).toEqual(["abc", "defgh"]);
    expect(buffer.text()).toBe("abcdefgh");
    expect(buffer.truncated).toBe(true);
  });

  it("cuts the piece that crosses the cap, and a listener that throws changes nothing", () => {
    const told: string[] = [];
    const buffer = new OutputBuffer(4, (chunk) => {
      told.push(chunk.toString());
      throw new Error("the view failed");
    });
    buffer.push(Buffer.from("abcdef"));
    expect(told).toEqual(["abcd"]);
    expect(buffer.text()).toBe("abcd");
  });
});
