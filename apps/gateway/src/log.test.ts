import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "./log.js";
import { redactText } from "./redact.js";

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, destination };
}

describe("logger redaction", () => {
  it("cuts bot tokens out of URLs and registered secrets out of every string", () => {
    expect(redactText("POST http://h/bot123:AbC-_9/sendMessage failed")).toBe(
      "POST http://h/bot<redacted>/sendMessage failed",
    );
    expect(redactText("key sk-very-secret here", ["sk-very-secret"])).toBe("key <redacted> here");
  });

  it("never writes a token to a log line: fields, nested fields, messages and errors", () => {
    const { lines, destination } = capture();
    const log = createLogger({ secrets: ["sk-abcdef123"], destination });
    log.info({ token: "777:tok", nested: { apiKey: "sk-abcdef123" } }, "calling /bot777:tok/getMe");
    log.error(
      { err: new Error("fetch http://x/bot777:tok/getUpdates: sk-abcdef123 refused") },
      "failed",
    );
    log.warn({ url: "http://x/bot777:tok/sendPhoto" }, "retry");
    const text = lines.join("");
    expect(lines).toHaveLength(3);
    expect(text).not.toContain("777:tok");
    expect(text).not.toContain("sk-abcdef123");
    expect(text).toContain("<redacted>");
  });
});
