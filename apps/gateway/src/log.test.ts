import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { emptyEnv } from "./config/env.js";
import { resolveConfig } from "./config/load.js";
import { StorageError } from "./durable/errors.js";
import { createLogger, lazyChild, resolveLogLevel } from "./log.js";
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

describe("log level", () => {
  it("LOG_LEVEL overrides log.level, which overrides the fallback", () => {
    expect(resolveLogLevel({ fromEnv: "debug", fromConfig: "error", fallback: "warn" })).toBe(
      "debug",
    );
    expect(resolveLogLevel({ fromConfig: "error", fallback: "warn" })).toBe("error");
    expect(resolveLogLevel({ fallback: "warn" })).toBe("warn");
  });

  it("an invalid LOG_LEVEL is an error naming the variable and every valid level", () => {
    expect(() =>
      resolveLogLevel({ fromEnv: "verbose", fromConfig: "info", fallback: "info" }),
    ).toThrow(
      'LOG_LEVEL="verbose" is not a log level; use one of: fatal, error, warn, info, debug, trace, silent',
    );
  });

  it("an invalid log.level in the config is a config error naming the key and the levels", () => {
    expect(() =>
      resolveConfig({ log: { level: "verbose" } }, { env: emptyEnv("/tmp/mg-unit") }),
    ).toThrow(
      'invalid config <embedded defaults>: log.level: got "verbose", expected one of "fatal", "error", "warn", "info", "debug", "trace", "silent"',
    );
    const config = resolveConfig({ log: { level: "debug" } }, { env: emptyEnv("/tmp/mg-unit") });
    expect(config.logLevel).toBe("debug");
  });
});

describe("log format", () => {
  it("pretty: one readable line with time, level, message and fields, secrets still cut", () => {
    const { lines, destination } = capture();
    const log = createLogger({ format: "pretty", secrets: ["sk-abcdef123"], destination });
    log.info({ sessionKey: "agent:a:telegram:dm:1", apiKey: "sk-abcdef123" }, "turn finished");
    expect(lines).toHaveLength(1);
    const line = stripAnsi(lines[0]!);
    expect(line).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: turn finished /);
    expect(line).toContain('"sessionKey":"agent:a:telegram:dm:1"');
    expect(line).not.toContain("sk-abcdef123");
    expect(line).not.toContain('"level"');
  });

  it("json: one JSON object per line with pino's fields", () => {
    const { lines, destination } = capture();
    createLogger({ format: "json", destination }).warn({ step: "runTurn" }, "failed");
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, msg: "failed", step: "runTurn" });
  });

  it("a destination other than stderr gets JSON unless told otherwise", () => {
    const { lines, destination } = capture();
    createLogger({ destination }).info("x");
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 30, msg: "x" });
  });
});

describe("error codes in log lines", () => {
  const journalFull = () =>
    new StorageError({
      operation: "record",
      path: "/var/lib/mediagate/journal.db",
      reason: "database or disk is full",
      systemCode: "SQLITE_FULL",
    });

  it("json: the err object carries the error's MG_ code beside its type and message", () => {
    const { lines, destination } = capture();
    createLogger({ format: "json", destination }).error({ err: journalFull() }, "not recorded");
    const { err } = JSON.parse(lines[0]!) as { err: Record<string, unknown> };
    expect(err).toMatchObject({
      type: "StorageError",
      code: "MG_JOURNAL_DISK_FULL",
      systemCode: "SQLITE_FULL",
      full: true,
    });
    expect(err.message).toContain("is full");
  });

  it("pretty: the code is printed with the error", () => {
    const { lines, destination } = capture();
    createLogger({ format: "pretty", destination }).error({ err: journalFull() }, "not recorded");
    expect(stripAnsi(lines.join(""))).toContain(`"code": "MG_JOURNAL_DISK_FULL"`);
  });
});

function stripAnsi(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching terminal colour codes
  return text.replace(/\u001b\[[0-9;]*m/g, "");
}

describe("lazyChild", () => {
  /** A pino logger at `level` counting the children it makes (pino's `onChild`). */
  function counted(level: string) {
    const { lines, destination } = capture();
    const made = { children: 0 };
    const log = pino({ level, onChild: () => made.children++ }, destination);
    return { log, lines, made };
  }
  const fields = (line: string | undefined) => {
    const { time: _time, pid: _pid, hostname: _host, ...rest } = JSON.parse(line ?? "{}");
    return rest as Record<string, unknown>;
  };

  it("makes no child for lines below the level, nor for its own lazy children", () => {
    const { log, lines, made } = counted("warn");
    const child = lazyChild(log, { sessionKey: "s" });
    const grandchild = child.child({ messageId: "m" });
    child.info("not written");
    grandchild.debug({ big: "x" }, "not written");
    expect(made.children).toBe(0);
    expect(lines).toEqual([]);
  });

  it("writes what parent.child(bindings) writes, the parent's bindings and its own", () => {
    const eager = counted("info");
    const lazy = counted("info");
    const eagerLine = () => {
      eager.log.child({ profile: "p" }).child({ sessionKey: "s" }).warn({ n: 1 }, "hello");
    };
    eagerLine();
    lazyChild(lazyChild(lazy.log, { profile: "p" }), { sessionKey: "s" }).warn({ n: 1 }, "hello");
    expect(lazy.lines).toHaveLength(1);
    expect(fields(lazy.lines[0])).toEqual(fields(eager.lines[0]));
    expect(fields(lazy.lines[0])).toMatchObject({ profile: "p", sessionKey: "s", msg: "hello" });
    expect(lazy.made.children).toBe(2);
  });

  it("makes its child once, whatever writes or asks after", () => {
    const { log, lines, made } = counted("info");
    const child = lazyChild(log, { sessionKey: "s" });
    child.info("one");
    child.error("two");
    expect(child.bindings()).toEqual({ sessionKey: "s" });
    expect(child.isLevelEnabled("debug")).toBe(false);
    expect(made.children).toBe(1);
    expect(lines.map((line) => fields(line).msg)).toEqual(["one", "two"]);
  });

  it("follows its parent's level until it is made, and its own once set", () => {
    const { log, lines } = counted("warn");
    const child = lazyChild(log, { sessionKey: "s" });
    child.info("below");
    log.level = "info";
    child.info("now written");
    child.level = "error";
    child.warn("below its own level");
    expect(log.isLevelEnabled("info")).toBe(true);
    expect(lines.map((line) => fields(line).msg)).toEqual(["now written"]);
  });

  it("keeps the logger's redaction: a secret in a lazy child's line is cut out", () => {
    const { lines, destination } = capture();
    const log = createLogger({ secrets: ["sk-abcdef123"], destination });
    lazyChild(log, { sessionKey: "s" }).warn({ apiKey: "sk-abcdef123" }, "key sk-abcdef123");
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain("sk-abcdef123");
    expect(lines[0]).toContain('"sessionKey":"s"');
  });
});
