import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { planMedia } from "@mediagate/media";
import { describe, expect, it } from "vitest";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { waitFor } from "../../../../test-support/wait.js";
import { createLogger } from "../log.js";
import { ConsoleChannel, ConsoleDefaults } from "./console.js";
import { SharedTerminal } from "./console-terminal.js";
import type { InboundMessage, OutboundReply } from "./types.js";

async function setup() {
  const home = await tempDirForTest("mg-console-");
  const input = new PassThrough();
  const output = new PassThrough();
  let printed = "";
  output.on("data", (c: Buffer) => {
    printed += c.toString();
  });
  const channel = new ConsoleChannel({
    profile: "default",
    home,
    input,
    output,
    prompt: "> ",
    now: () => new Date("2026-01-02T03:04:05.678Z"),
  });
  return { home, input, channel, printed: () => printed };
}

describe("ConsoleChannel", () => {
  it("turns each non-empty line into a message of the local user in the local DM", async () => {
    const { input, channel } = await setup();
    const messages: InboundMessage[] = [];
    await channel.start({ onMessage: async (m) => void messages.push(m), onFatal: () => {} });
    input.write("echo one\n\n  ls  \n");
    await new Promise((r) => setImmediate(r));
    await channel.stop();
    expect(messages.map((m) => [m.platform, m.chatType, m.chatId, m.userId, m.text])).toEqual([
      ["console", "dm", "local", "local", "echo one"],
      ["console", "dm", "local", "local", "ls"],
    ]);
    expect(new Set(messages.map((m) => m.messageId)).size).toBe(2);
  });

  it("prints the reply and copies each file to <home>/outbox/<timestamp>-<filename>", async () => {
    const { home, channel, printed } = await setup();
    const slotDir = join(home, "slot");
    await mkdir(join(slotDir, "workspace"), { recursive: true });
    await writeFile(join(slotDir, "workspace", "r.txt"), "report");
    const tmp = join(home, "tmp");
    await mkdir(tmp);
    const plan = await planMedia(
      "done\nMEDIA:/workspace/r.txt",
      {
        backend: "docker",
        slotDirs: [slotDir],
        volumes: [],
        allowDirs: [],
        protectedHomes: [],
        tmpDir: tmp,
      },
      channel.limits,
    );
    try {
      const target = { platform: "console", chatId: "local" } as const;
      const reply = { sessionKey: "k", profile: "default", target, text: plan.text, plan };
      const first = await channel.deliver(reply);
      const second = await channel.deliver(reply);
      expect(first.outcomes).toEqual([
        { status: "delivered", path: "/workspace/r.txt", kind: "document" },
      ]);
      expect(second.outcomes[0]?.status).toBe("delivered");
    } finally {
      await plan.dispose();
    }
    const files = (await readdir(join(home, "outbox"))).sort();
    expect(files).toEqual(["20260102T030405678Z-1-r.txt", "20260102T030405678Z-r.txt"]);
    expect(await readFile(join(home, "outbox", files[1]!), "utf8")).toBe("report");
    expect(printed()).toContain(`done\n[document, 6 bytes, ${join(home, "outbox", files[1]!)}]\n`);
  });

  it("prints a reply's terminal escapes as text: a command's output cannot drive the terminal", async () => {
    const { channel, printed } = await setup();
    const target = { platform: "console", chatId: "local" } as const;
    // What `cat` of a file another chat user left in a shared container would show: a
    // clipboard write (OSC 52), a title, a screen clear, a C1 CSI, a line rewritten by a lone CR.
    const text =
      "a\u001b]52;c;cm0gLXJmIH4K\u0007b\u001b]0;title\u001b\\c\u001b[2J\u009b31md\u0000\rrm -rf ~\r\nsafe\tcol\\x";
    const plan = { ready: () => [] } as unknown as OutboundReply["plan"];
    await channel.deliver({ sessionKey: "k", profile: "default", target, text, plan });
    await channel.sendText(target, "note\u001b[8mhidden");
    expect(printed()).toBe(
      "a\\x1b]52;c;cm0gLXJmIH4K\\x07b\\x1b]0;title\\x1b\\c\\x1b[2J\\x9b31md\\x00\\rrm -rf ~\nsafe\tcol\\x\n" +
        "note\\x1b[8mhidden\n",
    );
  });

  it("/attach sends a message with the file (ref = absolute path) and the rest of the line as text", async () => {
    const { home, input, channel } = await setup();
    const path = join(home, "my report.csv");
    await writeFile(path, "a,b\n");
    const messages: InboundMessage[] = [];
    await channel.start({ onMessage: async (m) => void messages.push(m), onFatal: () => {} });
    input.write(`/attach "${path}" sum column b\n`);
    await waitFor(() => expect(messages).toHaveLength(1));
    await channel.stop();
    expect(messages[0]).toMatchObject({
      text: "sum column b",
      attachments: [{ name: "my report.csv", sentAs: "document", size: 4, ref: path }],
    });
    expect(channel.attachments.maxBytes).toBe(ConsoleDefaults.attachMaxBytes);
  });

  it("/attach of a missing path or a directory prints what is wrong and sends nothing", async () => {
    const { home, input, channel, printed } = await setup();
    const messages: InboundMessage[] = [];
    await channel.start({ onMessage: async (m) => void messages.push(m), onFatal: () => {} });
    input.write(
      `/attach ${join(home, "nope.pdf")} read it\n/attach ${home}\n/attach\necho after\n`,
    );
    await waitFor(() => expect(messages).toHaveLength(1));
    await channel.stop();
    expect(messages.map((m) => [m.text, m.attachments])).toEqual([["echo after", undefined]]);
    expect(printed()).toContain(`📎 There is no file at ${join(home, "nope.pdf")}.`);
    expect(printed()).toContain(`📎 ${home} is a directory; /attach sends one file.`);
    expect(printed()).toContain("📎 /attach needs a file. Usage: /attach <path> [text]");
  });

  it("hands /help to the core like any command (its answer is the same on every channel)", async () => {
    const { input, channel, printed } = await setup();
    const messages: InboundMessage[] = [];
    await channel.start({ onMessage: async (m) => void messages.push(m), onFatal: () => {} });
    input.write("/help\n");
    await waitFor(() => expect(messages).toHaveLength(1));
    await channel.stop();
    expect(messages.map((m) => [m.userId, m.text])).toEqual([["local", "/help"]]);
    expect(printed()).not.toContain("/attach");
  });

  it("prints only the chat when not on a terminal: no prompt, and its own problems go to the log", async () => {
    const home = await tempDirForTest("mg-console-");
    const input = new PassThrough();
    const output = new PassThrough();
    let printed = "";
    output.on("data", (c: Buffer) => {
      printed += c.toString();
    });
    const logged: string[] = [];
    const logger = createLogger({ destination: { write: (l) => logged.push(l) } });
    const channel = new ConsoleChannel({ profile: "default", home, input, output, logger });
    await channel.start({
      onMessage: () => Promise.reject(new Error("journal unwritable")),
      onFatal: () => {},
    });
    input.write("ls\n");
    await waitFor(() => expect(logged).toHaveLength(1));
    await channel.sendText({ platform: "console", chatId: "local" }, "a chat line");
    await channel.stop();
    expect(printed).toBe("a chat line\n");
    expect(JSON.parse(logged[0]!)).toMatchObject({
      level: 40,
      msg: "could not record a console message",
      err: { message: "journal unwritable" },
    });
  });
});

describe("SharedTerminal", () => {
  it("a log line written while the prompt waits takes the prompt's line; the prompt is drawn again", () => {
    const terminal = new SharedTerminal();
    const screen: string[] = [];
    const sink = terminal.logSink({ write: (line) => screen.push(line) });
    sink.write("before any prompt\n");
    terminal.promptShown(() => screen.push("> typed"));
    sink.write("while waiting\n");
    terminal.lineEnded();
    sink.write("after enter\n");
    expect(screen).toEqual([
      "before any prompt\n",
      "\r\u001b[2Kwhile waiting\n",
      "> typed",
      "after enter\n",
    ]);
  });
});
