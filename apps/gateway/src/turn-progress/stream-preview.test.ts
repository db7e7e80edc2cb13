import { setImmediate as settle } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { manualClock } from "../../../../test-support/clock.js";
import { type ChatTarget, StatusCallError, type StatusMessages } from "../channels/types.js";
import { replyParts } from "../delivery/reply-parts.js";
import {
  PreviewEndedNote,
  type PreviewLedger,
  type PreviewMode,
  StreamPreview,
} from "./stream-preview.js";

/** A platform's status calls as the preview makes them: recorded, failing when told to. */
class RecordingStatus implements StatusMessages {
  readonly calls: string[] = [];
  readonly failures: (StatusCallError | undefined)[] = [];
  #ids = 0;
  constructor(readonly textLimit: StatusMessages["textLimit"] = { maxLength: 20 }) {}
  editIntervalMs(_target: ChatTarget): number {
    return 1000;
  }
  async post(_target: ChatTarget, text: string): Promise<string> {
    this.#fail(`post ${text}`);
    return String(++this.#ids);
  }
  async edit(_target: ChatTarget, id: string, text: string): Promise<void> {
    this.#fail(`edit ${id} ${text}`);
  }
  async remove(_target: ChatTarget, id: string): Promise<void> {
    this.#fail(`remove ${id}`);
  }
  async draft(_target: ChatTarget, draftId: number, text: string): Promise<void> {
    this.#fail(`draft ${draftId} ${text}`);
  }
  #fail(call: string): void {
    const failure = this.failures.shift();
    this.calls.push(failure === undefined ? call : `${call} ✗`);
    if (failure !== undefined) throw failure;
  }
}

const target: ChatTarget = { platform: "telegram", chatId: "7" };

function previewOf(
  status: RecordingStatus,
  mode: PreviewMode,
  adopt?: string,
  holdMs?: number,
  render?: { platform: "telegram" | "discord"; format: "plain" | "markdown" },
) {
  const clock = manualClock();
  const ledger: string[] = [];
  const recording: PreviewLedger = {
    first: async (id) => void ledger.push(`first ${id}`),
    rollovers: async (ids) => void ledger.push(`rollovers ${ids.join(",")}`),
    gone: async () => void ledger.push("gone"),
  };
  const preview = new StreamPreview(status, target, {
    mode,
    clock,
    draftId: 100,
    marginMs: 0,
    ledger: recording,
    takeOver: async () => adopt,
    holdMs,
    render,
  });
  const advance = async (ms: number) => {
    clock.advance(ms);
    for (let i = 0; i < 5; i++) await settle();
  };
  return { preview, advance, ledger };
}

describe("StreamPreview", () => {
  it("holds: shows nothing before holdMs, then what came so far at once; a turn done first shows none", async () => {
    const status = new RecordingStatus();
    const { preview, advance } = previewOf(status, "edit", undefined, 3000);
    preview.push("first\n");
    preview.push("second\n");
    await advance(2999);
    expect(status.calls).toEqual([]);
    await advance(1);
    expect(status.calls).toEqual(["post first\nsecond\n"]);
    await preview.finish();

    const quick = new RecordingStatus();
    const done = previewOf(quick, "edit", undefined, 3000);
    done.preview.push("all of it\n");
    await done.advance(1000);
    await done.preview.finish();
    await done.advance(5000);
    expect(quick.calls).toEqual([]);
    expect(done.preview.started).toBe(false);
  });

  it("edits one message at most once a second and rolls over past the length", async () => {
    const status = new RecordingStatus();
    const { preview, advance, ledger } = previewOf(status, "edit");
    preview.push("Hello");
    await advance(0);
    preview.push(" world");
    preview.push(" again");
    await advance(500);
    expect(status.calls).toEqual(["post Hello"]);
    await advance(500);
    expect(status.calls).toEqual(["post Hello", "edit 1 Hello world again"]);
    preview.push(" and more text");
    await advance(1000);
    await advance(1000);
    expect(status.calls.slice(2)).toEqual(["post and more text"]);
    expect(ledger).toEqual(["first 1", "rollovers 2"]);
    await preview.finish();
    expect(status.calls.slice(3)).toEqual(["remove 1", "remove 2"]);
    expect(ledger.at(-1)).toBe("gone");
  });

  it("adopts the status message instead of posting a second one", async () => {
    const status = new RecordingStatus();
    const { preview, advance, ledger } = previewOf(status, "edit", "9");
    preview.push("Hi");
    await advance(0);
    expect(status.calls).toEqual(["edit 9 Hi"]);
    expect(ledger).toEqual([]);
    await preview.finish();
    expect(status.calls).toEqual(["edit 9 Hi", "remove 9"]);
  });

  it("pauses for as long as a rate limit asks and then shows the latest text", async () => {
    const status = new RecordingStatus();
    const { preview, advance } = previewOf(status, "edit");
    preview.push("one");
    await advance(0);
    status.failures.push(new StatusCallError("edit", 429, "Too Many Requests", 5000));
    preview.push(" two");
    await advance(1000);
    preview.push(" three");
    await advance(4000);
    expect(status.calls).toEqual(["post one", "edit 1 one two ✗"]);
    await advance(1000);
    expect(status.calls.at(-1)).toBe("edit 1 one two three");
  });

  it("shows drafts with a new id per chunk and falls back to editing when refused", async () => {
    const status = new RecordingStatus();
    const { preview, advance } = previewOf(status, "draft");
    preview.push("a draft of text");
    await advance(0);
    preview.push(" past twenty");
    await advance(1000);
    expect(status.calls).toEqual(["draft 100 a draft of text", "draft 101 twenty"]);
    status.failures.push(new StatusCallError("draft", 400, "Bad Request"));
    preview.push("!");
    await advance(1000);
    await advance(1000);
    expect(preview.mode).toBe("edit");
    expect(status.calls.slice(2)).toEqual(["draft 101 twenty! ✗", "post a draft of text past"]);
  });

  it("keeps drafting when a draft is lost on the way: only the platform's refusal switches to editing", async () => {
    const status = new RecordingStatus();
    const { preview, advance } = previewOf(status, "draft");
    status.failures.push(new StatusCallError("draft", undefined, "no answer within 10000 ms"));
    preview.push("Hello");
    await advance(0);
    status.failures.push(new StatusCallError("draft", 502, "Bad Gateway"));
    preview.push(" there");
    await advance(1000);
    preview.push(" again");
    await advance(1000);
    expect(preview.mode).toBe("draft");
    expect(status.calls).toEqual([
      "draft 100 Hello ✗",
      "draft 100 Hello there ✗",
      "draft 100 Hello there again",
    ]);
    await preview.finish();
    expect(status.calls).toHaveLength(3);
  });

  it("never takes more messages than the final reply: past maxChunks, its head and the cut notice", async () => {
    const status = new RecordingStatus({ maxLength: 100, maxChunks: 2 });
    const { preview, advance } = previewOf(status, "edit");
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`);
    for (const word of words) {
      preview.push(`${word} `);
      await advance(1000);
    }
    await advance(1000);
    await advance(1000);
    // What each message shows last: posts get ids 1, 2, … in order; edits name theirs.
    const shown = new Map<string, string>();
    for (const call of status.calls) {
      const edit = /^edit (\d+) ([\s\S]*)$/.exec(call);
      if (edit?.[1] !== undefined) shown.set(edit[1], edit[2] ?? "");
      else if (call.startsWith("post ")) shown.set(String(shown.size + 1), call.slice(5));
    }
    expect(status.calls.filter((call) => call.startsWith("post "))).toHaveLength(2);
    expect([...shown.keys()]).toEqual(["1", "2"]);
    const finalTexts = replyParts(`${words.join(" ")} `, { maxLength: 100, maxChunks: 2 }).flatMap(
      (part) => (part.kind === "text" ? [part.text] : []),
    );
    expect(finalTexts).toHaveLength(2);
    expect(finalTexts[1]).toContain("reply.txt");
    expect([...shown.values()]).toEqual(finalTexts);
  });

  it("splits a Telegram Markdown preview as the rendered final: links take their label's room", async () => {
    const links = Array.from(
      { length: 12 },
      (_, i) => `- [page ${i}](https://example.com/a/long/path/to/the/documentation/page-${i})`,
    );
    const answer = `Sources:\n${links.join("\n")}\n`;
    const final = replyParts(answer, {
      maxLength: 200,
      maxChunks: 2,
      platform: "telegram",
      format: "markdown",
    }).flatMap((part) => (part.kind === "text" ? [part.plain] : []));
    // The final is one message: the URLs are in its links, not in its text.
    expect(final).toHaveLength(1);
    const status = new RecordingStatus({ maxLength: 200, maxChunks: 2 });
    const { preview, advance } = previewOf(status, "edit", undefined, undefined, {
      platform: "telegram",
      format: "markdown",
    });
    preview.push(answer);
    await advance(0);
    await advance(1000);
    expect(status.calls).toEqual(final.map((text) => `post ${text}`));
    expect(status.calls.join("\n")).not.toContain("✂️");
  });

  it("posts after a rate-limited post once the wait passed: Telegram and Discord posted nothing", async () => {
    const status = new RecordingStatus();
    const { preview, advance, ledger } = previewOf(status, "edit");
    preview.push("Hello world");
    await advance(0);
    preview.push(" and more text");
    await advance(1000);
    status.failures.push(new StatusCallError("post", 429, "Too Many Requests", 5000));
    await advance(1000);
    expect(status.calls).toEqual([
      "post Hello world",
      "edit 1 Hello world and more",
      "post text ✗",
    ]);
    preview.push(" yet");
    await advance(4000);
    expect(status.calls).toHaveLength(3);
    await advance(1000);
    expect(status.calls.slice(3)).toEqual(["post text yet"]);
    expect(ledger).toEqual(["first 1", "rollovers 2"]);
    await preview.finish();
    expect(status.calls.slice(4)).toEqual(["remove 1", "remove 2"]);
  });

  it("shows a plain reply on Discord escaped, split as its messages will be; Markdown as written", async () => {
    const output = "__init__.py\n# built *all* of it\n";
    const finalTexts = (format: "plain" | "markdown") =>
      replyParts(output, { maxLength: 40, maxChunks: 4, platform: "discord", format }).flatMap(
        (part) => (part.kind === "text" ? [part.text] : []),
      );
    const plain = new RecordingStatus({ maxLength: 40, maxChunks: 4 });
    const shell = previewOf(plain, "edit", undefined, undefined, {
      platform: "discord",
      format: "plain",
    });
    shell.preview.push(output);
    await shell.advance(0);
    await shell.advance(1000);
    expect(plain.calls).toEqual(finalTexts("plain").map((text) => `post ${text}`));
    expect(plain.calls[0]).toContain("\\_\\_init\\_\\_.py");

    const markdown = new RecordingStatus({ maxLength: 40, maxChunks: 4 });
    const model = previewOf(markdown, "edit", undefined, undefined, {
      platform: "discord",
      format: "markdown",
    });
    model.preview.push(output);
    await model.advance(0);
    expect(markdown.calls).toEqual([`post ${output}`]);
  });

  it("edits a preview message it could not delete twice into a short note; waits out a rate limit first", async () => {
    const status = new RecordingStatus();
    const { preview, advance, ledger } = previewOf(status, "edit");
    preview.push("half an answer");
    await advance(0);
    status.failures.push(
      new StatusCallError("remove", 502, "Bad Gateway"),
      new StatusCallError("remove", 502, "Bad Gateway"),
    );
    await preview.finish();
    expect(status.calls).toEqual([
      "post half an answer",
      "remove 1 ✗",
      "remove 1 ✗",
      `edit 1 ${PreviewEndedNote}`,
    ]);
    expect(ledger.at(-1)).toBe("gone");

    const limited = new RecordingStatus();
    const second = previewOf(limited, "edit");
    second.preview.push("text");
    await second.advance(0);
    limited.failures.push(new StatusCallError("remove", 429, "Too Many Requests", 3000));
    const finished = second.preview.finish();
    await second.advance(0);
    await second.advance(2999);
    expect(limited.calls).toEqual(["post text", "remove 1 ✗"]);
    await second.advance(1);
    await finished;
    expect(limited.calls).toEqual(["post text", "remove 1 ✗", "remove 1"]);
  });

  it("never posts again after a post failed", async () => {
    const status = new RecordingStatus();
    status.failures.push(new StatusCallError("post", 502, "Bad Gateway"));
    const { preview, advance } = previewOf(status, "edit");
    preview.push("lost?");
    await advance(0);
    preview.push(" more");
    await advance(5000);
    await preview.finish();
    expect(status.calls).toEqual(["post lost? ✗"]);
  });
});
