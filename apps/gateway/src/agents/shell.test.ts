import type { ExecResult } from "@mediagate/sandbox";
import { describe, expect, it } from "vitest";
import { formatShellReply, ShellAgent } from "./shell.js";
import type { AgentTurnInput, ToolRunner, TurnAttachment } from "./types.js";

const ok: ExecResult = {
  exitCode: 0,
  stdout: "",
  stderr: "",
  truncated: false,
  timedOut: false,
  aborted: false,
  durationMs: 1,
};

describe("formatShellReply", () => {
  it.each<[string, Partial<ExecResult>, string]>([
    ["stdout only", { stdout: "hello\n" }, "hello"],
    ["stdout then stderr", { stdout: "out\n", stderr: "err\n" }, "out\nerr"],
    ["stderr only with its exit code", { stderr: "boom\n", exitCode: 2 }, "boom\n[exit code 2]"],
    ["no output", {}, "(no output)"],
    ["no output, failing", { exitCode: 1 }, "(no output)\n[exit code 1]"],
    // A blank reply is sent as nothing at all (send-reply.ts): the user would get no answer.
    ["only blank lines (`echo; echo`)", { stdout: "\n\n" }, "(no output)"],
    ["only spaces and tabs", { stdout: "  \t", stderr: " \n" }, "(no output)"],
    [
      "a timeout instead of its exit code",
      { timedOut: true, exitCode: 137 },
      "(no output)\n[timed out]",
    ],
    ["an abort", { aborted: true, exitCode: 130, stdout: "part" }, "part\n[aborted]"],
    [
      "sandbox truncation",
      { stdout: "x", truncated: true },
      "x\n[output truncated by the sandbox]",
    ],
    [
      "a MEDIA line as part of the reply",
      { stdout: "made it\nMEDIA:/workspace/a.png\n" },
      "made it\nMEDIA:/workspace/a.png",
    ],
  ])("shows %s", (_label, result, expected) => {
    expect(formatShellReply({ ...ok, ...result }, 3_500)).toBe(expected);
  });

  it("keeps the tail of a long output behind a marker counting the dropped chars", () => {
    const lines = Array.from({ length: 1_000 }, (_, i) => `line ${i}`);
    const reply = formatShellReply({ ...ok, stdout: lines.join("\n") }, 200);
    expect(reply.endsWith("line 999")).toBe(true);
    expect(reply).not.toContain("line 0\n");
    const [marker, first] = reply.split("\n");
    const omitted = Number(/\[… (\d+) chars omitted …\]/.exec(marker ?? "")?.[1]);
    expect(first).toMatch(/^line \d+$/);
    expect(omitted + reply.length - (marker ?? "").length - 1).toBe(lines.join("\n").length);
  });

  it("keeps MEDIA lines from the dropped part of a long output", () => {
    const stdout = `MEDIA:/workspace/plot.png\n${"noise\n".repeat(1_000)}done`;
    const reply = formatShellReply({ ...ok, stdout }, 100);
    expect(reply.split("\n")[0]).toBe("MEDIA:/workspace/plot.png");
    expect(reply.endsWith("done")).toBe(true);
  });
});

/** A ToolRunner that answers every command with a fixed result and records the calls. */
function scripted(result: ExecResult) {
  const calls: {
    command: string;
    timeoutMs?: number;
    signal?: AbortSignal;
    env?: Readonly<Record<string, string>>;
  }[] = [];
  const tools: ToolRunner = {
    run: async (command, options) => {
      calls.push({ command, ...options });
      return result;
    },
    readFile: async () => "",
    writeFile: async () => {},
  };
  return { tools, calls };
}

function input(
  text: string,
  tools: ToolRunner,
  signal = new AbortController().signal,
): AgentTurnInput {
  return {
    text,
    profile: "default",
    sessionKey: "k",
    sessionId: "s",
    tools,
    signal,
    attachments: [],
  };
}

describe("ShellAgent", () => {
  it("runs the message text in the session shell with the turn's signal", async () => {
    const { tools, calls } = scripted({ ...ok, stdout: "/workspace\n" });
    const signal = new AbortController().signal;
    const agent = new ShellAgent({ timeoutMs: 5_000 });
    expect(agent.kind).toBe("shell");
    const result = await agent.runTurn(input("  pwd \n", tools, signal));
    expect(result.reply).toBe("/workspace");
    expect(calls).toEqual([{ command: "pwd", timeoutMs: 5_000, signal }]);
  });

  it("streams the command's output to the preview as it comes; the reply is the formatted result", async () => {
    const shown: string[] = [];
    const tools: ToolRunner = {
      run: async (_command, options) => {
        options?.onOutput?.("step 1\n");
        options?.onOutput?.("step 2\n");
        return { ...ok, stdout: "step 1\nstep 2\n", exitCode: 3 };
      },
      readFile: async () => "",
      writeFile: async () => {},
    };
    const result = await new ShellAgent().runTurn({
      ...input("./build", tools),
      onText: (piece) => shown.push(piece),
    });
    expect(shown).toEqual(["step 1\n", "step 2\n"]);
    expect(result.reply).toBe("step 1\nstep 2\n[exit code 3]");
    const quiet = scripted(ok);
    await new ShellAgent().runTurn(input("true", quiet.tools));
    expect(quiet.calls[0]).not.toHaveProperty("onOutput");
  });

  it("applies its reply cap, and saves the whole output as a file the reply names first", async () => {
    const { tools } = scripted({ ...ok, stdout: "z".repeat(10_000) });
    const written: [string, string][] = [];
    tools.writeFile = async (path, content) => {
      written.push([path, content]);
    };
    const result = await new ShellAgent({ maxReplyChars: 500 }).runTurn(input("yes z", tools));
    expect(written).toHaveLength(1);
    const [path, content] = written[0]!;
    expect(path).toMatch(/^\/workspace\/\.outputs\/output-\d{8}-\d{6}-[0-9a-f]{8}\.txt$/);
    expect(content).toBe("z".repeat(10_000));
    const name = path.split("/").at(-1);
    expect(result.reply).toBe(
      `MEDIA:${path}\n[the whole output (10 KB) is attached as ${name}]\n[… 9500 chars omitted …]\n${"z".repeat(500)}`,
    );
  });

  it("writes no file for an output that fits, and says so when the file cannot be written", async () => {
    const short = scripted({ ...ok, stdout: "fits" });
    let writes = 0;
    short.tools.writeFile = async () => {
      writes++;
    };
    expect((await new ShellAgent().runTurn(input("echo fits", short.tools))).reply).toBe("fits");
    expect(writes).toBe(0);

    const long = scripted({ ...ok, stdout: "y".repeat(1_000), truncated: true });
    long.tools.writeFile = async () => {
      throw new Error("disk full");
    };
    const reply = (await new ShellAgent({ maxReplyChars: 100 }).runTurn(input("yes", long.tools)))
      .reply;
    expect(reply.split("\n")[0]).toBe("[the whole output could not be saved as a file]");
    expect(reply).not.toContain("MEDIA:");
  });

  it("runs nothing for an empty message or an already aborted turn", async () => {
    const { tools, calls } = scripted(ok);
    const agent = new ShellAgent();
    expect((await agent.runTurn(input("   ", tools))).reply).toBe("(nothing to run)");
    const controller = new AbortController();
    controller.abort();
    expect((await agent.runTurn(input("ls", tools, controller.signal))).reply).toBe("[aborted]");
    expect(calls).toEqual([]);
  });

  it("lists files sent without a command, and names them to a command in MEDIAGATE_ATTACHMENTS", async () => {
    const files: TurnAttachment[] = [
      {
        name: "report.pdf",
        containerPath: "/workspace/inbox/report.pdf",
        hostPath: undefined,
        kind: "document",
        mime: "application/pdf",
        size: 12_345,
        sentAs: "document",
      },
      {
        name: "voice",
        containerPath: "/workspace/inbox/voice.ogg",
        hostPath: undefined,
        kind: "voice",
        mime: "audio/ogg",
        size: 900,
        sentAs: "voice",
      },
    ];
    const { tools, calls } = scripted(ok);
    const agent = new ShellAgent({ timeoutMs: 5_000 });
    const listed = await agent.runTurn({ ...input("  ", tools), attachments: files });
    expect(listed.reply).toBe(
      "/workspace/inbox/report.pdf (document, 12.3 KB)\n/workspace/inbox/voice.ogg (voice, 900 B)",
    );
    expect(calls).toEqual([]);

    const signal = new AbortController().signal;
    await agent.runTurn({
      ...input("wc -c $MEDIAGATE_ATTACHMENTS", tools, signal),
      attachments: files,
    });
    expect(calls).toEqual([
      {
        command: "wc -c $MEDIAGATE_ATTACHMENTS",
        timeoutMs: 5_000,
        signal,
        env: { MEDIAGATE_ATTACHMENTS: "/workspace/inbox/report.pdf\n/workspace/inbox/voice.ogg" },
      },
    ]);
  });
});
