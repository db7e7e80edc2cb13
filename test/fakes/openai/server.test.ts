import OpenAI, { APIError, toFile, toStreamingFile } from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import { reply } from "./replies.js";
import { contentText, derivedTranscript, FakeOpenAIServer } from "./server.js";

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await server.close();
});

function post(body: unknown, init: RequestInit = {}) {
  return fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-fake" },
    body: JSON.stringify(body),
    ...init,
  });
}

const request = { model: "m", messages: [{ role: "user", content: "hi" }] };

describe("FakeOpenAIServer", () => {
  it("answers queued replies in order and records bodies and the Authorization header", async () => {
    server.enqueue(reply.toolCall("terminal", { command: "ls" }), reply.text("done"));
    const first = (await (await post(request)).json()) as {
      choices: {
        message: { tool_calls: { id: string; function: { arguments: string } }[] };
        finish_reason: string;
      }[];
    };
    const second = (await (await post({ ...request, tools: [] })).json()) as {
      model: string;
      choices: { message: { content: string } }[];
    };
    expect(first.choices[0]?.finish_reason).toBe("tool_calls");
    expect(first.choices[0]?.message.tool_calls[0]?.function.arguments).toBe('{"command":"ls"}');
    expect(first.choices[0]?.message.tool_calls[0]?.id).toMatch(/^call_\d+$/);
    expect(second.model).toBe("m");
    expect(second.choices[0]?.message.content).toBe("done");
    expect(server.requests.map((r) => [r.index, r.authorization, r.body.model])).toEqual([
      [0, "Bearer sk-fake", "m"],
      [1, "Bearer sk-fake", "m"],
    ]);
    expect(server.requests[1]?.body.tools).toEqual([]);
  });

  it("falls back to the handler once the queue is empty", async () => {
    server.enqueue(reply.text("queued")).respondWith((r) => reply.text(`handled ${r.index}`));
    await post(request);
    const body = (await (await post(request)).json()) as {
      choices: { message: { content: string } }[];
    };
    expect(body.choices[0]?.message.content).toBe("handled 1");
  });

  it("answers an unscripted request with a 500 that says so", async () => {
    const res = await post(request);
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/no reply scripted for request 0/);
  });

  it("injects errors with their headers", async () => {
    server.enqueue(reply.rateLimited(25), reply.error(503, "overloaded"));
    const limited = await post(request);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after-ms")).toBe("25");
    const down = await post(request);
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({ error: { message: "overloaded" } });
  });

  it("streams text and tool calls split across chunks, with the usage in a last chunk", async () => {
    server.enqueue(
      reply.toolCall(
        "terminal",
        { command: "ls -la /workspace" },
        {
          content: "Looking",
          stream: { chunkChars: 3 },
          usage: { promptTokens: 7, completionTokens: 3, cachedTokens: 2 },
        },
      ),
    );
    const res = await post({ ...request, stream: true, stream_options: { include_usage: true } });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const events = (await res.text()).split("\n\n").filter((line) => line.startsWith("data: "));
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events.slice(0, -1).map((line) => JSON.parse(line.slice(6)));
    const deltas = chunks.flatMap((chunk) =>
      chunk.choices.map((choice: { delta: unknown }) => choice.delta),
    );
    expect(deltas.map((d) => d.content ?? "").join("")).toBe("Looking");
    const argParts = deltas
      .flatMap((d) => d.tool_calls ?? [])
      .map((call) => call.function.arguments);
    expect(argParts.length).toBe(3);
    expect(JSON.parse(argParts.join(""))).toEqual({ command: "ls -la /workspace" });
    const last = chunks.at(-1);
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({
      prompt_tokens: 7,
      completion_tokens: 3,
      total_tokens: 10,
      prompt_tokens_details: { cached_tokens: 2 },
    });
    expect(server.reportedUsage()).toEqual({
      promptTokens: 7,
      completionTokens: 3,
      cachedTokens: 2,
    });
  });

  it("streams without a usage chunk unless asked, and reports none then", async () => {
    server.enqueue(reply.text("Hello there", { stream: { chunkChars: 4 } }));
    const res = await post({ ...request, stream: true });
    const events = (await res.text()).split("\n\n").filter((line) => line.startsWith("data: "));
    const chunks = events.slice(0, -1).map((line) => JSON.parse(line.slice(6)));
    expect(chunks.some((chunk) => "usage" in chunk)).toBe(false);
    expect(server.requests[0]?.usage).toBeUndefined();
  });

  it("paces a long stream without piling listeners on its response", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning);
    process.on("warning", onWarning);
    try {
      server.enqueue(reply.text("x".repeat(40), { stream: { chunkChars: 1, everyMs: 1 } }));
      const res = await post({ ...request, stream: true });
      const events = (await res.text()).split("\n\n").filter((line) => line.startsWith("data: "));
      expect(events.length).toBeGreaterThan(40);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("answers a scripted error to a streamed request as JSON, before any event", async () => {
    server.enqueue(reply.error(503, "overloaded"));
    const res = await post({ ...request, stream: true, stream_options: { include_usage: true } });
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: { message: "overloaded" } });
    expect(server.reportedUsage()).toEqual({
      promptTokens: 0,
      completionTokens: 0,
      cachedTokens: 0,
    });
  });

  it("rejects other routes and bodies without messages", async () => {
    expect((await fetch(`${server.baseUrl}/embeddings`)).status).toBe(404);
    expect((await post({ model: "m" })).status).toBe(400);
    expect(server.requests).toEqual([]);
  });

  it("lists its models on GET /models and records who asked", async () => {
    const res = await fetch(`${server.baseUrl}/models`, {
      headers: { authorization: "Bearer sk-list" },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ object: "list", data: [{ id: "fake-model" }] });
    expect(server.modelListings).toEqual([{ authorization: "Bearer sk-list", status: 200 }]);
    expect(server.requests).toEqual([]);
  });

  it("answers 401 to every request without its API key, when it has one", async () => {
    const keyed = await FakeOpenAIServer.start({ apiKey: "sk-right", models: ["a", "b"] });
    try {
      const wrong = await fetch(`${keyed.baseUrl}/models`, {
        headers: { authorization: "Bearer sk-wrong" },
      });
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toMatchObject({ error: { code: "invalid_api_key" } });
      const right = await fetch(`${keyed.baseUrl}/models`, {
        headers: { authorization: "Bearer sk-right" },
      });
      expect(await right.json()).toMatchObject({ data: [{ id: "a" }, { id: "b" }] });
      expect(keyed.modelListings.map((l) => l.status)).toEqual([401, 200]);
    } finally {
      await keyed.close();
    }
  });

  it("holds a hanging request until the client gives up, and records that", async () => {
    server.enqueue(reply.hang());
    const controller = new AbortController();
    const pending = post(request, { signal: controller.signal });
    await server.waitForRequests(1);
    controller.abort();
    await expect(pending).rejects.toThrow();
    await waitUntil(
      () => server.requests[0]?.clientAborted === true,
      "the server saw the client leave",
    );
  });

  it("delays a reply and drops it when the client leaves first", async () => {
    server.enqueue(reply.text("slow", { delayMs: 60_000 }), reply.text("quick", { delayMs: 1 }));
    const controller = new AbortController();
    const slow = post(request, { signal: controller.signal });
    await server.waitForRequests(1);
    controller.abort();
    await expect(slow).rejects.toThrow();
    const quick = (await (await post(request)).json()) as {
      choices: { message: { content: string } }[];
    };
    expect(quick.choices[0]?.message.content).toBe("quick");
  });
});

describe("FakeOpenAIServer transcriptions and image inputs, through the openai SDK", () => {
  const client = () => new OpenAI({ baseURL: server.baseUrl, apiKey: "sk-audio", maxRetries: 0 });
  /** The start of an Ogg page: what a voice note begins with. */
  const ogg = Buffer.concat([Buffer.from("OggS\0\x02", "latin1"), Buffer.alloc(40, 7)]);
  /** Bytes as a stream of two chunks, as a file read would give them. */
  async function* chunks(bytes: Buffer) {
    yield bytes.subarray(0, 10);
    yield bytes.subarray(10);
  }

  it("transcribes a streamed file into a transcript derived from its bytes, and records it", async () => {
    const result = await client().audio.transcriptions.create({
      file: toStreamingFile(chunks(ogg), "voice note.ogg", { type: "audio/ogg" }),
      model: "whisper-1",
    });
    expect(result.text).toBe(derivedTranscript(ogg));
    expect(server.transcriptions).toHaveLength(1);
    const [recorded] = server.transcriptions;
    expect(recorded?.model).toBe("whisper-1");
    expect(recorded?.filename).toBe("voice note.ogg");
    expect(recorded?.mime).toBe("audio/ogg");
    expect(recorded?.bytes.equals(ogg)).toBe(true);
    expect(recorded?.authorization).toBe("Bearer sk-audio");
    expect(recorded?.status).toBe(200);
    expect(server.requests).toEqual([]);
  });

  it("answers scripted transcripts first, then the handler's, and plain text when asked", async () => {
    server
      .enqueueTranscription({ text: "scripted words" })
      .transcribeWith((file) => ({ text: `handled ${file.index} ${file.fields.language}` }));
    const first = await client().audio.transcriptions.create({
      file: await toFile(ogg, "a.ogg"),
      model: "whisper-1",
    });
    const second = await client().audio.transcriptions.create({
      file: await toFile(ogg, "b.ogg"),
      model: "whisper-1",
      language: "de",
    });
    const plain = await client().audio.transcriptions.create({
      file: await toFile(ogg, "c.ogg"),
      model: "whisper-1",
      response_format: "text",
    });
    expect(first.text).toBe("scripted words");
    expect(second.text).toBe("handled 1 de");
    expect(plain).toBe("handled 2 undefined");
  });

  it("fails a transcription with the status it was told, and records that", async () => {
    server.enqueueTranscription({ status: 503, message: "no capacity" });
    const error = await client()
      .audio.transcriptions.create({ file: await toFile(ogg, "a.ogg"), model: "whisper-1" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(503);
    expect((error as APIError).message).toMatch(/no capacity/);
    expect(server.transcriptions.map((t) => t.status)).toEqual([503]);
  });

  it("refuses a transcription without a model", async () => {
    const form = new FormData();
    form.set("file", new Blob([ogg], { type: "audio/ogg" }), "a.ogg");
    const res = await fetch(`${server.baseUrl}/audio/transcriptions`, {
      method: "POST",
      body: form,
    });
    expect(res.status).toBe(400);
    expect(server.transcriptions.map((t) => [t.status, t.filename])).toEqual([[400, "a.ogg"]]);
  });

  it("records a chat request's image_url parts and their text", async () => {
    server.enqueue(reply.text("a red square"));
    const url = `data:image/png;base64,${Buffer.from("png bytes").toString("base64")}`;
    await client().chat.completions.create({
      model: "m",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "what is this?" },
            { type: "image_url", image_url: { url } },
          ],
        },
      ],
    });
    expect(server.imageUrls(0)).toEqual([url]);
    expect(contentText(server.requests[0]?.body.messages[0]?.content)).toBe("what is this?");
  });
});
