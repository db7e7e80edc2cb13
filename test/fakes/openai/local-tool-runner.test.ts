import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalToolRunner, OutsideWorkspaceError } from "./local-tool-runner.js";

let root: string;
let runner: LocalToolRunner;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "mediagate-tools-"));
  runner = new LocalToolRunner(root);
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe("LocalToolRunner", () => {
  it("runs commands with /workspace standing for its directory", async () => {
    const result = await runner.run(
      "echo hi > /workspace/a.txt && cat a.txt && echo err >&2; exit 3",
    );
    expect(result).toMatchObject({ exitCode: 3, stdout: "hi\n", stderr: "err\n", aborted: false });
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("hi\n");
  });

  it("kills a command on abort and on timeout", async () => {
    const controller = new AbortController();
    const running = runner.run("sleep 30", { signal: controller.signal });
    await runner.waitForCommands(1);
    controller.abort();
    expect(await running).toMatchObject({ aborted: true, timedOut: false });
    expect(await runner.run("sleep 30", { timeoutMs: 50 })).toMatchObject({ timedOut: true });
  });

  it("reads and writes files under /workspace only", async () => {
    await runner.writeFile("/workspace/d/n.txt", "note");
    expect(await runner.readFile("d/n.txt")).toBe("note");
    expect(await runner.readFile("/workspace/d/n.txt", 2)).toBe("no");
    await expect(runner.readFile("/etc/passwd")).rejects.toBeInstanceOf(OutsideWorkspaceError);
    await expect(runner.writeFile("../x", "")).rejects.toBeInstanceOf(OutsideWorkspaceError);
  });
});
