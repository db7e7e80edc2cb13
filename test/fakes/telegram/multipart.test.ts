import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { boundaryOf, MultipartError, parseMultipart } from "./multipart.js";

const boundary = "----------abc123";

function body(...parts: (string | Buffer)[]): Buffer {
  return Buffer.concat(parts.map((part) => (typeof part === "string" ? Buffer.from(part) : part)));
}

describe("parseMultipart", () => {
  it("reads grammY's unquoted filename with spaces and keeps the bytes exactly", () => {
    const bytes = Buffer.from([0, 13, 10, 45, 45, 255, 13, 10, 13, 10, 1]);
    const parts = parseMultipart(
      body(
        `--${boundary}\r\n`,
        'content-disposition:form-data;name="chat_id"\r\n\r\n42',
        `\r\n--${boundary}\r\n`,
        'content-disposition:form-data;name="q1w2";filename=my report final.pdf\r\n',
        "content-type:application/octet-stream\r\n\r\n",
        bytes,
        `\r\n--${boundary}--\r\n`,
      ),
      boundary,
    );
    expect(parts.map((p) => [p.name, p.filename])).toEqual([
      ["chat_id", undefined],
      ["q1w2", "my report final.pdf"],
    ]);
    expect(parts[0]?.data.toString()).toBe("42");
    expect(parts[1]?.data.equals(bytes)).toBe(true);
  });

  it("reads the quoted, spaced header style browsers and curl send", () => {
    const parts = parseMultipart(
      body(
        `--${boundary}\r\n`,
        'Content-Disposition: form-data; name="document"; filename="a b.txt"\r\n',
        "Content-Type: text/plain\r\n\r\nhello",
        `\r\n--${boundary}--\r\n`,
      ),
      boundary,
    );
    expect(parts).toHaveLength(1);
    expect(parts[0]).toMatchObject({
      name: "document",
      filename: "a b.txt",
      contentType: "text/plain",
    });
    expect(parts[0]?.data.toString()).toBe("hello");
  });

  it("rejects a body without a closing boundary", () => {
    const truncated = body(`--${boundary}\r\n`, 'content-disposition:form-data;name="x"\r\n\r\n1');
    expect(() => parseMultipart(truncated, boundary)).toThrow(MultipartError);
  });

  it("round-trips arbitrary bytes and filenames", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 512 }),
        fc.stringMatching(/^[A-Za-z0-9 ._-]{1,40}$/),
        (data, filename) => {
          const bytes = Buffer.from(data);
          const parts = parseMultipart(
            body(
              `--${boundary}\r\n`,
              `content-disposition:form-data;name="f";filename=${filename}\r\n\r\n`,
              bytes,
              `\r\n--${boundary}--\r\n`,
            ),
            boundary,
          );
          expect(parts[0]?.filename).toBe(filename);
          expect(parts[0]?.data.equals(bytes)).toBe(true);
        },
      ),
    );
  });
});

describe("boundaryOf", () => {
  it("finds quoted and bare boundaries and ignores other content types", () => {
    expect(boundaryOf("multipart/form-data; boundary=xyz")).toBe("xyz");
    expect(boundaryOf('multipart/form-data; boundary="x y"')).toBe("x y");
    expect(boundaryOf("application/json")).toBeUndefined();
    expect(boundaryOf(undefined)).toBeUndefined();
  });
});
