/**
 * Streamed replies (docs/streaming.md; issue 26): the time from the model's first token to the
 * first visible text of the reply in the chat, streaming on (`stream: auto`: drafts in a
 * Telegram private chat, and `stream: edit`) against off. Not a test. The real `mediagate
 * start` CLI (built, a child process, the `openai` agent) against the repository's fake model
 * (SSE: the first token, then a pause of `--think-ms`, then the rest) and Telegram fake, both
 * in this process; a text-only answer starts no container. Prints one JSON object per line.
 *
 * `pnpm build && pnpm --filter @mediagate/bench stream [--turns N] [--think-ms N]`
 * (defaults 8 turns per mode, 2000 ms). Everything it makes is removed at the end.
 */

import { type RunningCli, spawnCli } from "../test/e2e/harness/cli.js";
import { CliInstall } from "../test/e2e/harness/cli-install.js";
import { FakeOpenAIServer, reply } from "../test/fakes/openai/index.js";
import { FakeTelegram, type RecordedCall } from "../test/fakes/telegram/index.js";

const User = 920_001;
const Answer =
  "The first words arrive at once, and the rest after the model thought it over. ".repeat(6);

function flag(name: string, fallback: number): number {
  const args = process.argv.slice(2);
  const at = args.lastIndexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(args[at + 1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} needs a positive integer`);
  return value;
}

const turns = flag("turns", 8);
const thinkMs = flag("think-ms", 2000);
const emit = (line: Record<string, unknown>): void => console.log(JSON.stringify(line));

/** A call that shows the reply's text (not the status line) in the user's chat. */
const visible = (call: RecordedCall): boolean =>
  call.ok &&
  String(call.params.chat_id) === String(User) &&
  ["sendMessageDraft", "sendMessage", "editMessageText"].includes(call.method) &&
  String(call.params.text ?? "").startsWith("The first words");

/** Polls `check` every 5 ms (the figure's resolution); throws naming `what` after a minute. */
async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 60_000;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`bench:stream: ${what} did not happen`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

async function measure(mode: "off" | "auto" | "edit"): Promise<void> {
  const telegram = new FakeTelegram();
  const { apiRoot } = await telegram.start();
  telegram.limitEdits();
  const model = await FakeOpenAIServer.start();
  const install = await CliInstall.create(`bench-stream-${mode}`, {
    telegram: { token: telegram.token, apiRoot, pollTimeoutSeconds: 1 },
    allowedUsers: [`telegram:${User}`],
    agent: { kind: "openai", baseUrl: model.baseUrl, model: "fake-model" },
    stream: mode,
  });
  const samples: number[] = [];
  let gateway: RunningCli | undefined;
  try {
    gateway = spawnCli(["start", "-c", install.configFile], {
      home: install.workDir,
      timeoutMs: 600_000,
    });
    await until(() => gateway?.stderr().includes('"msg":"channel started"') === true, "start");
    for (let turn = 0; turn < turns; turn++) {
      const before = model.requests.length;
      let shownAt: number | undefined;
      const stop = telegram.onCall((call) => {
        if (shownAt === undefined && visible(call)) shownAt = performance.now();
      });
      model.enqueue(reply.text(Answer, { stream: { chunkChars: 24, afterFirstMs: thinkMs } }));
      telegram.sendPrivateText({ userId: User, text: `question ${turn}` });
      await until(
        () => shownAt !== undefined && model.requests[before]?.firstTokenAtMs !== undefined,
        `turn ${turn} (${mode}) to show text`,
      );
      stop();
      const shown = shownAt as number | undefined;
      const first = model.requests[before]?.firstTokenAtMs;
      if (shown !== undefined && first !== undefined) samples.push(shown - first);
      // The next turn once this one's reply is complete in the chat.
      await telegram.waitFor(
        (call) =>
          call.method === "sendMessage" && call.ok && String(call.params.text) === Answer.trim(),
        60_000,
      );
      telegram.forgetCalls();
      // A person reads before asking again: the next turn's first draft is not refused by
      // Telegram's per-chat pace because this turn's last call was a moment ago.
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
  } finally {
    gateway?.signal("SIGTERM");
    await gateway?.ended;
    await install.dispose();
    await model.close();
    await telegram.stop();
  }
  const sorted = [...samples].sort((a, b) => a - b);
  emit({
    figure: "first_token_to_visible_text",
    stream: mode,
    n: sorted.length,
    think_ms: thinkMs,
    p50_ms: Math.round(percentile(sorted, 0.5)),
    p90_ms: Math.round(percentile(sorted, 0.9)),
  });
}

for (const mode of ["off", "auto", "edit"] as const) await measure(mode);
