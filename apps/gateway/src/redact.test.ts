import { describe, expect, it } from "vitest";
import { looksLikeToken, Redacted, Redactor, redactText } from "./redact.js";

describe("Redactor", () => {
  it("cuts registered secrets out of text, the longest first", () => {
    const redactor = new Redactor(["abcdef", "abcdefgh-longer"]);
    expect(redactor.text("x abcdefgh-longer y abcdef z")).toBe(`x ${Redacted} y ${Redacted} z`);
  });

  it("ignores values too short to be secrets, which would mangle ordinary words", () => {
    expect(redactText("the key is on", ["key", "on"])).toBe("the key is on");
  });

  it("learns secrets after it was made", () => {
    const redactor = new Redactor();
    expect(redactor.text("token 123:abcdef")).toBe("token 123:abcdef");
    redactor.add(["123:abcdef"]);
    expect(redactor.text("token 123:abcdef")).toBe(`token ${Redacted}`);
  });

  it.each([
    ["a Bot API URL", "GET http://h/bot123:AbC-_9/getMe", `GET http://h/bot${Redacted}/getMe`],
    ["URL credentials", "to https://user:pa55w0rd@host/x", `to https://${Redacted}@host/x`],
    [
      "an authorization header",
      '{"authorization":"Bot abc.def.ghi"}',
      `{"authorization":"Bot ${Redacted}"}`,
    ],
    ["a bearer credential", "Bearer sk-0123456789abcdef0", `Bearer ${Redacted}`],
    ["ordinary text", "Bot started; Bearer of news", "Bot started; Bearer of news"],
  ])("recognises %s by its shape", (_name, text, clean) => {
    expect(redactText(text)).toBe(clean);
  });

  it("scrubs every string of a value, errors included, keeping their class", () => {
    const redactor = new Redactor(["sk-secret-1"]);
    const error = new TypeError("failed with sk-secret-1", { cause: new Error("sk-secret-1") });
    const clean = redactor.value({ a: ["sk-secret-1"], error }) as { a: string[]; error: Error };
    expect(clean.a).toEqual([Redacted]);
    expect(clean.error).toBeInstanceOf(TypeError);
    expect(clean.error.message).toBe(`failed with ${Redacted}`);
    expect(String(clean.error.stack)).not.toContain("sk-secret-1");
    expect((clean.error.cause as Error).message).toBe(Redacted);
  });
});

describe("looksLikeToken", () => {
  it.each([
    "7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
    "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.abcdefghijklmnopqrstuvwxyz0123456789AB",
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv",
    "ghp_0123456789abcdefABCDEF0123456789abcd",
    "Zq3xW9vB7nM2kL5jH8gF4dS1aP6oI0uYtReWqAsD",
  ])("recognises %s", (value) => {
    expect(looksLikeToken(value)).toBe(true);
  });

  it.each([
    "default",
    "team-discord_2",
    "claude-3-5-sonnet-20241022",
    "meta-llama/Llama-3.3-70B-Instruct-Turbo",
    "mediagate-sandbox:test",
    "telegram:123456789",
    "127.0.0.1:9464",
    "pairing",
    "/srv/mediagate/profiles/work",
  ])("leaves %s alone", (value) => {
    expect(looksLikeToken(value)).toBe(false);
  });
});
