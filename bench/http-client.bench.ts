/**
 * What the gateway's two HTTP clients cost per call (not a test; issue 31, targets 3 and 4).
 * A server in another process (so only the client's CPU is counted) answers each call at once;
 * each variant makes `--calls` calls, 16 at a time, after 300 warm-ups, and reports the
 * process CPU (user + system, all threads) per call and the calls per second. Prints one JSON
 * line per variant, `{"bench": "http_client_<variant>", "cpu_ms_per_call", "calls_per_s"}`.
 *
 * `pnpm bench:http-client [--calls N] [--rounds R]` after `pnpm --filter @mediagate/gateway
 * build`. The variants:
 *   bot_node_fetch     grammY's `sendMessage` on its default client: node-fetch over a
 *                      keep-alive `http.Agent` (what the gateway used before)
 *   bot_platform_fetch grammY on the platform `fetch`
 *   bot_gateway        grammY on the gateway's `trackingFetch` (undici's `request`)
 *   model_platform_fetch  a streamed chat completion through the `openai` SDK's stream helper
 *                      on the platform `fetch` (the SDK's default)
 *   model_gateway      the same answer through the gateway's `ChatStreams` (undici's
 *                      `request`, `eventsource-parser`, no SDK)
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { ChatStreams, trackingFetch } from "@mediagate/gateway";
import { Api } from "grammy";
import OpenAI from "openai";

const args = process.argv.slice(2);
function flag(name: string, fallback: number): number {
  const at = args.indexOf(name);
  if (at < 0) return fallback;
  const value = Number(args[at + 1]);
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(`${name}: got ${args[at + 1]}, expected a positive integer`);
  }
  return value;
}
const calls = flag("--calls", 3000);
const rounds = flag("--rounds", 2);
const concurrency = 16;

// The server: a Bot API answer for any POST to /bot…, a three-chunk stream for /v1/….
const server = `
const http = require("node:http");
const sent = JSON.stringify({ ok: true, result: { message_id: 1, date: 1, chat: { id: 1, type: "private" }, text: "hello there" } });
const chunk = (delta, finish, extra) => "data: " + JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }], ...extra }) + "\\n\\n";
const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
const s = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    if (req.url.startsWith("/v1/")) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(chunk({ role: "assistant", content: "" }, null));
      res.write(chunk({ content: "hello there, this is the answer" }, null));
      res.end(chunk({}, "stop", { usage }) + "data: [DONE]\\n\\n");
    } else {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(sent) });
      res.end(sent);
    }
  });
});
s.keepAliveTimeout = 60000;
s.listen(0, "127.0.0.1", () => process.stdout.write(s.address().port + "\\n"));
`;
const child = spawn(process.execPath, ["-e", server], { stdio: ["ignore", "pipe", "inherit"] });
const [line] = (await once(child.stdout, "data")) as [Buffer];
const root = `http://127.0.0.1:${Number(String(line).trim())}`;

const bot = (options: ConstructorParameters<typeof Api>[1]) => {
  const api = new Api("123:bench", { apiRoot: root, ...options });
  return async () => {
    await api.sendMessage(1, "hello there, this is a reply text");
  };
};
const Answer = "hello there, this is the answer";
const model = () => {
  const client = new OpenAI({ apiKey: "k", baseURL: `${root}/v1` });
  return async () => {
    const stream = client.chat.completions.stream({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      stream_options: { include_usage: true },
    });
    const completion = await stream.finalChatCompletion();
    if (completion.choices[0]?.message.content !== Answer) {
      throw new Error("the model answer came back wrong");
    }
  };
};
const gatewayModel = () => {
  const streams = new ChatStreams();
  return async () => {
    let streamed = "";
    const completion = await streams.complete({
      baseUrl: `${root}/v1`,
      apiKey: "k",
      params: {
        model: "m",
        messages: [{ role: "user", content: "hi" }],
        stream: true,
        stream_options: { include_usage: true },
      },
      signal: new AbortController().signal,
      onEvent: () => {},
      onContent: (piece) => {
        streamed += piece;
      },
    });
    if (completion.choices[0]?.message.content !== Answer || streamed !== Answer) {
      throw new Error("the model answer came back wrong");
    }
  };
};
const variants: Record<string, () => Promise<void>> = {
  bot_node_fetch: bot({}),
  bot_platform_fetch: bot({
    fetch: (url: string | URL | Request, init?: RequestInit) => fetch(url, init),
  }),
  bot_gateway: bot({ fetch: trackingFetch() as unknown as typeof fetch }),
  model_platform_fetch: model(),
  model_gateway: gatewayModel(),
};

async function drive(call: () => Promise<void>, n: number): Promise<void> {
  let started = 0;
  const worker = async () => {
    while (started++ < n) await call();
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

try {
  for (let round = 1; round <= rounds; round++) {
    for (const [name, call] of Object.entries(variants)) {
      await drive(call, 300);
      const cpu = process.cpuUsage();
      const start = performance.now();
      await drive(call, calls);
      const used = process.cpuUsage(cpu);
      const seconds = (performance.now() - start) / 1000;
      const cpuMs = (used.user + used.system) / 1000 / calls;
      console.log(
        JSON.stringify({
          bench: `http_client_${name}`,
          round,
          cpu_ms_per_call: Number(cpuMs.toFixed(3)),
          calls_per_s: Math.round(calls / seconds),
          n: calls,
        }),
      );
    }
  }
} finally {
  child.kill();
}
