import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  OpenAIAgent,
  type OpenAIAgentOptions,
  OpenAIEndpointError,
  OpenAITurnAbortedError,
  SqliteStateStore,
  type StateStore,
  stateDbPath,
  type TurnAttachment,
} from "@mediagate/gateway";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../test-support/wait.js";
import {
  contentText,
  FakeOpenAIServer,
  LocalToolRunner,
  type RequestMessage,
  reply,
} from "../fakes/openai/index.js";

const ApiKey = "sk-e2e-4f7c0ffee-must-never-leak";
const SessionKey = "agent:default:telegram:dm:42";

let dir: string;
let server: FakeOpenAIServer;
let store: StateStore;
let runner: LocalToolRunner;
let logLines: string[];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "mediagate-openai-e2e-"));
  mkdirSync(join(dir, "workspace"));
  server = await FakeOpenAIServer.start();
  store = await SqliteStateStore.open(stateDbPath(dir));
  runner = new LocalToolRunner(join(dir, "workspace"));
  logLines = [];
});

afterEach(async () => {
  await server.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  expect(logLines.join("\n")).not.toContain(ApiKey);
});

function makeAgent(options: Partial<OpenAIAgentOptions> = {}): OpenAIAgent {
  const logger = pino({ level: "debug" }, { write: (line: string) => void logLines.push(line) });
  return new OpenAIAgent({
    baseUrl: server.baseUrl,
    apiKey: ApiKey,
    model: "fake-model",
    store,
    logger,
    maxRetries: 0,
    ...options,
  });
}

async function turn(
  agent: OpenAIAgent,
  text: string,
  signal = new AbortController().signal,
  attachments: readonly TurnAttachment[] = [],
) {
  return agent.runTurn({
    text,
    profile: "default",
    sessionKey: SessionKey,
    sessionId: await store.currentSessionId(SessionKey),
    tools: runner,
    signal,
    attachments,
  });
}

/** A file the user sent, saved as `/workspace/inbox/<name>` of the runner's workspace. */
function inboxFile(name: string, bytes: Buffer, kind: string, mime: string): TurnAttachment {
  mkdirSync(join(runner.root, "inbox"), { recursive: true });
  const hostPath = join(runner.root, "inbox", name);
  writeFileSync(hostPath, bytes);
  const containerPath = `/workspace/inbox/${name}`;
  return { name, containerPath, hostPath, kind, mime, size: bytes.length, sentAs: "document" };
}

/** The conversation of a request without the system message, as [role, content] pairs. */
function dialogue(index: number): [string, string | null | undefined][] {
  const messages = server.requests[index]?.body.messages ?? [];
  return messages.filter((m) => m.role !== "system").map((m) => [m.role, contentText(m.content)]);
}

function messagesOf(index: number): readonly RequestMessage[] {
  return server.requests[index]?.body.messages ?? [];
}

describe("openai agent against an OpenAI-compatible endpoint", () => {
  it("streams the reply's text as it arrives, assembles split tool calls and sums the usage", async () => {
    server.enqueue(
      reply.toolCall(
        "terminal",
        { command: "echo streamed-tool-call-ran" },
        { content: "Let me look.", stream: { chunkChars: 4 } },
      ),
      reply.text("The answer is forty-two, as printed.", { stream: { chunkChars: 5 } }),
    );
    const pieces: string[] = [];
    const result = await makeAgent().runTurn({
      text: "what is it?",
      profile: "default",
      sessionKey: SessionKey,
      sessionId: await store.currentSessionId(SessionKey),
      tools: runner,
      signal: new AbortController().signal,
      attachments: [],
      onText: (piece) => pieces.push(piece),
    });

    expect(result.reply).toBe("The answer is forty-two, as printed.");
    expect(pieces.length).toBeGreaterThan(5);
    expect(pieces.join("")).toBe("Let me look.\n\nThe answer is forty-two, as printed.");
    const toolMessage = messagesOf(1).find((m) => m.role === "tool");
    expect(contentText(toolMessage?.content)).toContain("streamed-tool-call-ran");
    const call = messagesOf(1).find((m) => m.tool_calls !== undefined)?.tool_calls?.[0];
    expect(JSON.parse(call?.function.arguments ?? "")).toEqual({
      command: "echo streamed-tool-call-ran",
    });
    // Each streamed answer's last chunk carried its usage; the turn sums them.
    expect(server.requests.map((request) => request.usage)).not.toContain(undefined);
    const reported = server.reportedUsage();
    expect(reported.completionTokens).toBeGreaterThan(0);
    expect(result.usage).toEqual({
      inputTokens: reported.promptTokens,
      outputTokens: reported.completionTokens,
      cachedTokens: reported.cachedTokens,
    });
  });

  it("executes a terminal tool call in the sandbox and sends its output back as a tool message", async () => {
    server.enqueue(
      reply.toolCall("terminal", { command: "echo hi > /workspace/a.txt && cat /workspace/a.txt" }),
      reply.text("Here it is.\nMEDIA:/workspace/a.txt"),
    );

    const result = await turn(makeAgent(), "make a file");

    expect(result.reply).toBe("Here it is.\nMEDIA:/workspace/a.txt");
    expect(readFileSync(runner.file("a.txt"), "utf8")).toBe("hi\n");
    expect(server.requests).toHaveLength(2);
    const [first, second] = server.requests;
    expect(first?.authorization).toBe(`Bearer ${ApiKey}`);
    expect(first?.body.model).toBe("fake-model");
    expect(first?.body.stream).toBe(true);
    expect(first?.body.stream_options).toEqual({ include_usage: true });
    expect(first?.body.tools?.map((t) => t.function.name)).toEqual([
      "terminal",
      "read_file",
      "write_file",
    ]);
    const system = messagesOf(0)[0];
    expect(system?.role).toBe("system");
    expect(system?.content).toMatch(/Linux sandbox/);
    expect(system?.content).toMatch(/\/workspace/);
    expect(system?.content).toMatch(/MEDIA:\/absolute\/path/);

    const [, user, assistant, tool] = messagesOf(1);
    expect(user).toEqual({ role: "user", content: "make a file" });
    const callId = assistant?.tool_calls?.[0]?.id;
    expect(assistant?.tool_calls?.[0]?.function.name).toBe("terminal");
    expect(tool).toEqual({
      role: "tool",
      tool_call_id: callId,
      content: "exit_code: 0\nstdout:\nhi",
    });
    expect(second?.body.stream).toBe(true);
  });

  it("writes and reads files with the file tools, in the order the model asked", async () => {
    server.enqueue(
      reply.toolCalls([
        {
          name: "write_file",
          arguments: { path: "/workspace/notes/todo.md", content: "- ship it\n" },
        },
        { name: "read_file", arguments: { path: "/workspace/notes/todo.md" } },
        { name: "read_file", arguments: { path: "/workspace/missing.txt" } },
      ]),
      reply.text("noted"),
    );

    await turn(makeAgent(), "take a note");

    expect(readFileSync(runner.file("notes/todo.md"), "utf8")).toBe("- ship it\n");
    const tools = messagesOf(1).filter((m) => m.role === "tool");
    expect(tools.map((m) => m.content)).toEqual([
      "wrote 10 chars to /workspace/notes/todo.md",
      "- ship it\n",
      expect.stringMatching(/^error: cannot read \/workspace\/missing\.txt: .*ENOENT/),
    ]);
  });

  it("cuts long tool output before sending it back to the model", async () => {
    server.enqueue(reply.toolCall("terminal", { command: "seq 1 20000" }), reply.text("counted"));

    await turn(makeAgent({ maxToolOutputChars: 600 }), "count");

    const tool = messagesOf(1).find((m) => m.role === "tool");
    expect(tool?.content?.length).toBeLessThanOrEqual(600);
    expect(tool?.content).toMatch(/chars omitted/);
    expect(contentText(tool?.content)?.endsWith("19999\n20000")).toBe(true);
  });

  it("stops after maxToolRounds and replies with what it has plus a note", async () => {
    server.respondWith(() =>
      reply.toolCall("terminal", { command: "echo again" }, { content: "Still digging." }),
    );
    const agent = makeAgent({ maxToolRounds: 2 });

    const result = await turn(agent, "loop forever");

    expect(runner.commands).toEqual(["echo again", "echo again"]);
    expect(server.requests).toHaveLength(3);
    expect(result.reply).toMatch(/^Still digging\.\n\n\(Stopped after 2 tool rounds/);

    // The saved exchange stays valid: the unexecuted calls were answered, so the next
    // request is accepted and carries the whole previous turn.
    server.respondWith(() => reply.text("fine"));
    await turn(agent, "and now?");
    const next = messagesOf(3);
    const calls = next.flatMap((m) => m.tool_calls ?? []).map((c) => c.id);
    const answered = next.filter((m) => m.role === "tool").map((m) => m.tool_call_id);
    expect(answered).toEqual(calls);
    expect(next.at(-2)).toEqual({ role: "assistant", content: result.reply });
    expect(next.at(-1)).toEqual({ role: "user", content: "and now?" });
  });

  it("executes at most 16 calls of one answer and answers the rest as not executed", async () => {
    const calls = Array.from({ length: 18 }, (_, i) => ({
      name: "terminal",
      arguments: { command: `echo ${i}` },
    }));
    server.enqueue(reply.toolCalls(calls), reply.text("enough"));

    await turn(makeAgent(), "many");

    expect(runner.commands).toHaveLength(16);
    const tools = messagesOf(1).filter((m) => m.role === "tool");
    expect(tools).toHaveLength(18);
    expect(tools.slice(16).map((m) => m.content)).toEqual([
      "not executed: at most 16 tool calls per answer",
      "not executed: at most 16 tool calls per answer",
    ]);
  });

  it("says so when the model's reply was cut off by its length limit", async () => {
    server.enqueue(reply.text("The answer is", { finishReason: "length" }));

    const result = await turn(makeAgent(), "long answer please");

    expect(result.reply).toBe("The answer is\n\n(reply cut off: the model hit its length limit)");
  });

  it("keeps history per session across turns and across a restart", async () => {
    server.enqueue(reply.text("one"), reply.text("two"), reply.text("three"));

    await turn(makeAgent(), "first");
    await turn(makeAgent(), "second");
    expect(dialogue(1)).toEqual([
      ["user", "first"],
      ["assistant", "one"],
      ["user", "second"],
    ]);

    await store.close();
    store = await SqliteStateStore.open(stateDbPath(dir));
    await turn(makeAgent(), "third");
    expect(dialogue(2)).toEqual([
      ["user", "first"],
      ["assistant", "one"],
      ["user", "second"],
      ["assistant", "two"],
      ["user", "third"],
    ]);
  });

  it("sends an image input in every request of its turn but keeps only the text in the history", async () => {
    const png = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), Buffer.alloc(2000, 9)]);
    const photo = inboxFile("p.png", png, "photo", "image/png");
    const url = `data:image/png;base64,${png.toString("base64")}`;
    server.enqueue(reply.toolCall("terminal", { command: "true" }), reply.text("a photo"));
    server.enqueue(reply.text("still here"));
    const agent = makeAgent({ vision: true });

    await turn(agent, "see", undefined, [photo]);
    await turn(agent, "and now?");
    expect(server.imageUrls(0)).toEqual([url]);
    expect(server.imageUrls(1)).toEqual([url]);
    expect(server.imageUrls(2)).toEqual([]);
    const line = `[attachment: /workspace/inbox/p.png image/png ${png.length}]`;
    expect(messagesOf(2).find((m) => m.role === "user")).toEqual({
      role: "user",
      content: `see\n\n${line}`,
    });
    const stored = JSON.stringify(
      await store.loadHistory(await store.currentSessionId(SessionKey), 50),
    );
    expect(stored).toContain(line);
    expect(stored).not.toContain(png.toString("base64").slice(0, 40));
  });

  it("transcribes with the transcription endpoint's own key and never logs it", async () => {
    const transcriptionKey = "sk-transcribe-31337-must-never-leak";
    const audio = inboxFile("a.mp3", Buffer.from("ID3 fake mp3 bytes"), "audio", "audio/mpeg");
    server.enqueueTranscription({ text: "play it again" });
    server.enqueue(reply.text("ok"));
    const result = await turn(
      makeAgent({
        transcription: { baseUrl: server.baseUrl, model: "whisper-1", apiKey: transcriptionKey },
      }),
      "",
      undefined,
      [audio],
    );
    expect(result.reply).toBe("ok");
    expect(result.notices).toBeUndefined();
    expect(server.transcriptions.map((t) => [t.authorization, t.filename, t.mime])).toEqual([
      [`Bearer ${transcriptionKey}`, "a.mp3", "audio/mpeg"],
    ]);
    expect(contentText(messagesOf(0).at(-1)?.content)).toBe(
      `[attachment: /workspace/inbox/a.mp3 audio/mpeg 18]\n[transcript of /workspace/inbox/a.mp3]\nplay it again\n[end of transcript]`,
    );
    expect(logLines.join("\n")).not.toContain(transcriptionKey);
  });

  it("starts from an empty conversation after /reset rotates the session id", async () => {
    server.enqueue(reply.text("one"), reply.text("two"), reply.text("fresh"));
    await turn(makeAgent(), "remember me");
    await turn(makeAgent(), "still there?");
    expect(dialogue(1)[0]).toEqual(["user", "remember me"]);

    await store.rotateSessionId(SessionKey);
    await turn(makeAgent(), "who am I?");

    expect(dialogue(2)).toEqual([["user", "who am I?"]]);
  });

  it("aborts a turn waiting for the model, closes the request and saves nothing", async () => {
    server.enqueue(reply.hang());
    const controller = new AbortController();
    const agent = makeAgent();

    const running = turn(agent, "this will be stopped", controller.signal);
    await server.waitForRequests(1);
    controller.abort(new Error("/stop"));

    const error = await running.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpenAITurnAbortedError);
    expect(error).toMatchObject({ phase: "model", toolRounds: 0 });
    await waitUntil(
      () => server.requests[0]?.clientAborted === true,
      "the server saw the client leave",
    );

    server.enqueue(reply.text("hello again"));
    await turn(agent, "next");
    expect(dialogue(1)).toEqual([["user", "next"]]);
  });

  it("aborts a turn during a tool call, kills the command and asks the model nothing more", async () => {
    server.enqueue(reply.toolCall("terminal", { command: "sleep 30" }), reply.text("never asked"));
    const controller = new AbortController();

    const running = turn(makeAgent(), "sleep", controller.signal);
    await runner.waitForCommands(1);
    controller.abort();

    await expect(running).rejects.toMatchObject({ name: "OpenAITurnAbortedError", phase: "tool" });
    expect(runner.results).toMatchObject([{ aborted: true }]);
    expect(server.requests).toHaveLength(1);
    expect(await store.loadHistory(await store.currentSessionId(SessionKey))).toEqual([]);
  });

  it("turns a 500 into a clear error naming status and host, without the API key", async () => {
    server.enqueue(reply.error(500, `upstream exploded while checking key ${ApiKey}`));

    const error = await turn(makeAgent(), "hi").then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(OpenAIEndpointError);
    const host = new URL(server.baseUrl).host;
    expect(error).toMatchObject({ kind: "http", status: 500, host, model: "fake-model" });
    const text = `${String(error)} ${JSON.stringify(error)} ${(error as Error).stack}`;
    expect(text).toContain(`model endpoint ${host} answered HTTP 500`);
    expect(text).not.toContain(ApiKey);
    expect(logLines.some((line) => line.includes("model request failed"))).toBe(true);
    expect(await store.loadHistory(await store.currentSessionId(SessionKey))).toEqual([]);
  });

  it("retries a 429 as the endpoint asks and then answers", async () => {
    server.enqueue(reply.rateLimited(1), reply.rateLimited(1), reply.text("finally"));

    const result = await turn(makeAgent({ maxRetries: 2 }), "hi");

    expect(result.reply).toBe("finally");
    expect(server.requests).toHaveLength(3);
  });

  it("gives up on a 429 after its retries with the status in the error", async () => {
    server.enqueue(reply.rateLimited(1), reply.rateLimited(1));

    await expect(turn(makeAgent({ maxRetries: 1 }), "hi")).rejects.toMatchObject({
      name: "OpenAIEndpointError",
      status: 429,
    });
    expect(server.requests).toHaveLength(2);
  });

  it("reports a slow endpoint as a timeout", async () => {
    server.enqueue(reply.text("too late", { delayMs: 60_000 }));

    await expect(turn(makeAgent({ timeoutMs: 100 }), "hi")).rejects.toMatchObject({
      name: "OpenAIEndpointError",
      kind: "timeout",
    });
  });

  it("reports an unreachable endpoint by host", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));

    const error = await turn(makeAgent({ baseUrl: `http://127.0.0.1:${port}/v1` }), "hi").then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).toMatchObject({
      name: "OpenAIEndpointError",
      kind: "connection",
      host: `127.0.0.1:${port}`,
    });
    expect((error as Error).message).toMatch(/could not be reached.*ECONNREFUSED/);
  });

  it("reports a completion without choices as an unusable answer", async () => {
    server.enqueue(
      reply.raw(200, JSON.stringify({ id: "x", object: "chat.completion", choices: [] })),
    );

    await expect(turn(makeAgent(), "hi")).rejects.toMatchObject({
      name: "OpenAIEndpointError",
      kind: "bad_response",
    });
  });

  it("answers a model that calls an unknown tool with an error it can recover from", async () => {
    server.enqueue(
      reply.toolCall("browser", { url: "https://example.com" }),
      reply.text("ok, no browser"),
    );

    const result = await turn(makeAgent(), "browse");

    expect(result.reply).toBe("ok, no browser");
    expect(messagesOf(1).find((m) => m.role === "tool")?.content).toMatch(/unknown tool "browser"/);
    expect(runner.commands).toEqual([]);
  });
});
