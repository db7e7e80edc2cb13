import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Fifos } from "../../../../test-support/fifo.js";
import { attachmentFor, consoleFetcher, parseAttach } from "./console-attach.js";
import { AttachmentFetchError } from "./types.js";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "mg-attach-"));
});

/** Pipes where a file was (what a path may be by the time a message is run again). */
const fifos = new Fifos();

afterEach(async () => {
  fifos.release();
  await rm(dir, { recursive: true, force: true });
});

describe("parseAttach", () => {
  it.each([
    ["/attach /tmp/a.pdf", { path: "/tmp/a.pdf", text: "" }],
    ["/attach /tmp/a.pdf  summarize it ", { path: "/tmp/a.pdf", text: "summarize it" }],
    ['/attach "/tmp/my file.pdf" what is it', { path: "/tmp/my file.pdf", text: "what is it" }],
    ["/attach '/tmp/it\"s.txt'", { path: '/tmp/it"s.txt', text: "" }],
    ["/attach notes.txt", { path: "/work/notes.txt", text: "" }],
    ["/attach ../up.txt x", { path: "/up.txt", text: "x" }],
    ["/attach ~/in home.txt", { path: "/home/me/in", text: "home.txt" }],
    ['/attach "~/in home.txt"', { path: "/home/me/in home.txt", text: "" }],
  ])("reads %j", (line, expected) => {
    expect(parseAttach(line, "/work", "/home/me")).toEqual(expected);
  });

  it.each([
    ["/attach", /needs a file/],
    ["/attach   ", /needs a file/],
    ['/attach "/tmp/my file.pdf', /closing " is missing/],
    ['/attach "/tmp/a"b', /space after the quoted path/],
    ['/attach "" x', /path is empty/],
  ])("says what is wrong with %j, and how it is used", (line, problem) => {
    const answer = parseAttach(line, "/work", "/home/me");
    expect(answer).toMatch(problem);
    expect(answer).toMatch(/quote a path with spaces/);
  });

  it("leaves other lines alone", () => {
    expect(parseAttach("ls /attach")).toBeUndefined();
    expect(parseAttach("/attachment x")).toBeUndefined();
    expect(parseAttach("/status")).toBeUndefined();
  });
});

describe("attachmentFor", () => {
  it("makes a readable file an attachment whose ref is its absolute path", async () => {
    const path = join(dir, "report.csv");
    await writeFile(path, "a,b\n");
    expect(await attachmentFor(path)).toEqual({
      name: "report.csv",
      sentAs: "document",
      size: 4,
      ref: path,
    });
    await writeFile(join(dir, "p.PNG"), "x");
    expect(await attachmentFor(join(dir, "p.PNG"))).toMatchObject({ sentAs: "photo" });
  });

  it("says there is no file at a missing path, and how to quote one with spaces", async () => {
    const answer = await attachmentFor(join(dir, "nope.pdf"));
    expect(answer).toBe(
      `📎 There is no file at ${join(dir, "nope.pdf")}. Check the path (quote it if it has spaces: /attach "my file.pdf"); nothing was sent.`,
    );
  });

  it("refuses a directory, saying it sends one file", async () => {
    expect(await attachmentFor(dir)).toMatch(/is a directory; \/attach sends one file/);
  });
});

describe("consoleFetcher", () => {
  it("streams the file's bytes from disk, every chunk read into the same buffer", async () => {
    const path = join(dir, "data.bin");
    const bytes = Buffer.from(Array.from({ length: 1_200_000 }, (_, i) => i % 251));
    await writeFile(path, bytes);
    const fetcher = consoleFetcher(1000);
    expect(fetcher.maxBytes).toBe(1000);
    const chunks: Buffer[] = [];
    const memory = new Set<ArrayBufferLike>();
    const stream = await fetcher.open(
      { name: "data.bin", sentAs: "document", ref: path },
      new AbortController().signal,
    );
    for await (const chunk of stream) {
      chunks.push(Buffer.from(chunk)); // valid only until the next one
      memory.add(chunk.buffer);
    }
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
    expect(chunks.length).toBeGreaterThan(1);
    expect(memory.size).toBe(1);
  });

  it("fails with a reason naming the path when the file is gone", async () => {
    const path = join(dir, "gone.txt");
    const error = await consoleFetcher(1000)
      .open({ name: "gone.txt", sentAs: "document", ref: path }, new AbortController().signal)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AttachmentFetchError);
    expect((error as AttachmentFetchError).reason).toBe(`${path} is no longer there`);
  });

  it("refuses a path that became a pipe, without waiting for a writer", async () => {
    // /attach checked a file; the message runs again after a restart and finds a FIFO there.
    // Opening it for reading would block until something writes: the session would hang.
    const path = fifos.at(join(dir, "was-a-file.txt"));
    const error = await consoleFetcher(1000)
      .open({ name: "was-a-file.txt", sentAs: "document", ref: path }, new AbortController().signal)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AttachmentFetchError);
    expect((error as AttachmentFetchError).reason).toBe(
      `${path} is no longer a regular file (a device, socket or pipe)`,
    );
  });
});
