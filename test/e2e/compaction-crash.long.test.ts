import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ChatMessage, SqliteStateStore, stateDbPath } from "@mediagate/gateway";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../test-support/wait.js";
import { FakeOpenAIServer, isSummaryRequest, reply } from "../fakes/openai/index.js";

const Session = "session-under-test";
const Turns = 1_000;

let dir: string;
let child: ChildProcess | undefined;
let server: FakeOpenAIServer | undefined;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "mg-compaction-crash-"));
  const store = await SqliteStateStore.open(stateDbPath(dir));
  const messages: ChatMessage[] = [];
  for (let n = 0; n < Turns; n++) {
    messages.push({ role: "user", content: `FACT{${n}} ${"words ".repeat(4)}` });
    messages.push({ role: "assistant", content: `noted ${n}` });
  }
  await store.appendHistory(Session, messages);
  await store.close();
});

afterEach(async () => {
  if (child !== undefined && child.exitCode === null && child.signalCode === null) {
    child.kill("SIGKILL");
    await once(child, "exit");
  }
  child = undefined;
  await server?.close();
  server = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `script` (an ES module body with the gateway imported as `g`) in a child process. */
function runChild(script: string): { process: ChildProcess; lines: string[] } {
  const lines: string[] = [];
  const gateway = import.meta.resolve("@mediagate/gateway");
  const file = join(dir, "child.mjs");
  writeFileSync(file, `import * as g from ${JSON.stringify(gateway)};\n${script}`);
  const process_ = spawn(process.execPath, [file], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, MG_DB: stateDbPath(dir), MG_SESSION: Session },
  });
  process_.stdout!.setEncoding("utf8");
  process_.stdout!.on("data", (chunk: string) => lines.push(...chunk.split("\n").filter(Boolean)));
  child = process_;
  return { process: process_, lines };
}

async function kill(process_: ChildProcess): Promise<void> {
  process_.kill("SIGKILL");
  await once(process_, "exit");
}

async function conversation() {
  const store = await SqliteStateStore.open(stateDbPath(dir));
  try {
    return {
      conversation: await store.loadConversation(Session),
      stored: (await store.loadHistory(Session)).length,
    };
  } finally {
    await store.close();
  }
}

describe("compaction under SIGKILL", () => {
  it("keeps the old history when killed while the summary request is out", async () => {
    server = await FakeOpenAIServer.start();
    server.enqueue(reply.hang());
    const { process: running } = runChild(`
      const store = await g.SqliteStateStore.open(process.env.MG_DB);
      const agent = new g.OpenAIAgent({ baseUrl: ${JSON.stringify(server.baseUrl)}, model: "m",
        store, logger: g.createLogger({ level: "silent" }), maxRetries: 0 });
      await agent.compact({ sessionId: process.env.MG_SESSION, sessionKey: "crash-key",
        signal: new AbortController().signal });
    `);
    await waitUntil(() => server!.requests.some(isSummaryRequest), "the summary request");
    await kill(running);
    const after = await conversation();
    expect(after.conversation.summary).toBeUndefined();
    expect(after.conversation.messages).toHaveLength(Turns * 2);
  });

  it("leaves a whole summary or the one before, never half, when killed while writing them", async () => {
    // Summaries of 64 KiB each, written one after another as fast as the store takes them.
    const { process: running, lines } = runChild(`
      const store = await g.SqliteStateStore.open(process.env.MG_DB);
      const ids = (await store.loadConversation(process.env.MG_SESSION)).messages.map((m) => m.id);
      let base;
      for (let k = 1; k < ids.length; k += 2) {
        const content = "through " + ids[k] + " " + "x".repeat(64 * 1024);
        await store.saveSummary(process.env.MG_SESSION, { content, throughId: ids[k], baseThroughId: base });
        base = ids[k];
        process.stdout.write(k + "\\n");
      }
      process.stdout.write("done\\n");
      await new Promise(() => {});
    `);
    await waitUntil(() => lines.length >= 10, "ten summaries written");
    await kill(running);
    const after = await conversation();
    const summary = after.conversation.summary;
    expect(summary).toBeDefined();
    expect(summary!.content).toBe(`through ${summary!.throughId} ${"x".repeat(64 * 1024)}`);
    expect(after.stored).toBe(Turns * 2);
    const first = after.conversation.messages[0];
    expect(first?.id).toBe(summary!.throughId + 1);
    expect(first?.message.role).toBe("user");
    expect(lines).not.toContain("done");
  });
});
