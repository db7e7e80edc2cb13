import type { ExecResult } from "@mediagate/sandbox";
import { describe, expect, it } from "vitest";
import type { ChatToolCall } from "../state/types.js";
import { ToolRefusedError } from "./tool-refused.js";
import { executeToolCall, formatExecResult, TOOL_DEFINITIONS, TOOL_NAMES } from "./tools.js";
import type { ToolRunner } from "./types.js";

const ok: ExecResult = {
  exitCode: 0,
  stdout: "",
  stderr: "",
  truncated: false,
  timedOut: false,
  aborted: false,
  durationMs: 1,
};

/** A ToolRunner over an in-memory file map that records what it was asked to do. */
class RecordingRunner implements ToolRunner {
  readonly files = new Map<string, string>();
  readonly runs: { command: string; timeoutMs?: number; signal?: AbortSignal }[] = [];
  result: ExecResult = ok;
  failWith: Error | undefined;

  async run(command: string, options?: { timeoutMs?: number; signal?: AbortSignal }) {
    if (this.failWith) throw this.failWith;
    this.runs.push({ command, ...options });
    return this.result;
  }

  async readFile(path: string, maxBytes?: number) {
    if (this.failWith) throw this.failWith;
    const text = this.files.get(path);
    if (text === undefined) throw new Error(`ENOENT: ${path}`);
    return text.slice(0, maxBytes);
  }

  async writeFile(path: string, content: string) {
    if (this.failWith) throw this.failWith;
    this.files.set(path, content);
  }
}

function call(name: string, args: unknown): ChatToolCall {
  const raw = typeof args === "string" ? args : JSON.stringify(args);
  return { id: "call_1", type: "function", function: { name, arguments: raw } };
}

const signal = new AbortController().signal;
const options = { signal, timeoutMs: 5_000, maxOutputChars: 1_000, readMaxBytes: 64 };

describe("TOOL_DEFINITIONS", () => {
  it("offers exactly terminal, read_file and write_file with their required arguments", () => {
    expect(TOOL_DEFINITIONS.map((tool) => tool.function.name)).toEqual([...TOOL_NAMES]);
    expect(TOOL_DEFINITIONS.map((tool) => tool.function.parameters?.required)).toEqual([
      ["command"],
      ["path"],
      ["path", "content"],
    ]);
  });
});

describe("executeToolCall", () => {
  it("runs terminal commands with the turn's signal and time limit", async () => {
    const runner = new RecordingRunner();
    runner.result = { ...ok, stdout: "hi\n" };
    const outcome = await executeToolCall(
      call("terminal", { command: "echo hi" }),
      runner,
      options,
    );
    expect(runner.runs).toEqual([{ command: "echo hi", timeoutMs: 5_000, signal }]);
    expect(outcome).toEqual({ ok: true, content: "exit_code: 0\nstdout:\nhi" });
  });

  it("writes and reads files through the runner", async () => {
    const runner = new RecordingRunner();
    const wrote = await executeToolCall(
      call("write_file", { path: "/workspace/n.txt", content: "note" }),
      runner,
      options,
    );
    expect(wrote.ok).toBe(true);
    expect(runner.files.get("/workspace/n.txt")).toBe("note");
    const read = await executeToolCall(
      call("read_file", { path: "/workspace/n.txt" }),
      runner,
      options,
    );
    expect(read).toEqual({ ok: true, content: "note" });
  });

  it("passes the read cap to the runner", async () => {
    const runner = new RecordingRunner();
    runner.files.set("big", "b".repeat(500));
    const read = await executeToolCall(call("read_file", { path: "big" }), runner, options);
    expect(read.content).toBe("b".repeat(64));
  });

  it("truncates long output before it goes back to the model", async () => {
    const runner = new RecordingRunner();
    runner.result = { ...ok, stdout: `${"x".repeat(5_000)}END` };
    const outcome = await executeToolCall(call("terminal", { command: "yes" }), runner, options);
    expect(outcome.content.length).toBeLessThanOrEqual(1_000);
    expect(outcome.content).toMatch(/chars omitted/);
    expect(outcome.content.endsWith("END")).toBe(true);
  });

  it.each([
    ["unknown tool", call("browser", {}), /unknown tool "browser"/],
    ["arguments that are not JSON", call("terminal", "{command:"), /not valid JSON/],
    [
      "a missing argument",
      call("write_file", { path: "a" }),
      /invalid arguments for write_file: content/,
    ],
    [
      "a wrongly typed argument",
      call("terminal", { command: 3 }),
      /invalid arguments for terminal/,
    ],
    ["an empty command", call("terminal", { command: "" }), /invalid arguments for terminal/],
    [
      "a file that cannot be read",
      call("read_file", { path: "/nope" }),
      /cannot read \/nope: ENOENT/,
    ],
  ])("answers %s with an error message the model can act on", async (_label, toolCall, pattern) => {
    const runner = new RecordingRunner();
    const outcome = await executeToolCall(toolCall, runner, options);
    expect(outcome.ok).toBe(false);
    expect(outcome.content).toMatch(pattern);
    expect(runner.runs).toEqual([]);
  });

  it("ends the turn when the sandbox itself is unavailable", async () => {
    const runner = new RecordingRunner();
    const failure = new Error("cannot reach unix:///var/run/docker.sock");
    failure.name = "DockerUnavailableError";
    runner.failWith = failure;
    await expect(
      executeToolCall(call("read_file", { path: "/workspace/a" }), runner, options),
    ).rejects.toBe(failure);
    await expect(
      executeToolCall(call("terminal", { command: "ls" }), runner, options),
    ).rejects.toBe(failure);
  });
});

describe("formatExecResult", () => {
  it("shows exit code, notes, stdout and stderr", () => {
    const text = formatExecResult({
      ...ok,
      exitCode: 124,
      stdout: "partial\n",
      stderr: "oops\n",
      timedOut: true,
      truncated: true,
    });
    expect(text).toBe(
      [
        "exit_code: 124",
        "note: the command hit its time limit and was killed",
        "note: the sandbox dropped output beyond its cap",
        "stdout:",
        "partial",
        "stderr:",
        "oops",
      ].join("\n"),
    );
  });

  it("says when there was no output", () => {
    expect(formatExecResult({ ...ok, exitCode: 1, aborted: true })).toBe(
      "exit_code: 1\nnote: the command was cancelled\n(no output)",
    );
  });
});

describe("a refused tool call (approvals)", () => {
  it("answers the model `not run: …` and runs nothing, for a command and a write", async () => {
    const runner = new RecordingRunner();
    runner.failWith = new ToolRefusedError("@ada denied it; it was not run", "denied");
    const run = await executeToolCall(call("terminal", { command: "rm -rf /" }), runner, options);
    expect(run).toEqual({ ok: false, content: "not run: @ada denied it; it was not run" });
    const write = await executeToolCall(
      call("write_file", { path: "/etc/x", content: "y" }),
      runner,
      options,
    );
    expect(write.content).toBe("not run: @ada denied it; it was not run");
    expect(runner.runs).toEqual([]);
    expect(runner.files.size).toBe(0);
  });
});
