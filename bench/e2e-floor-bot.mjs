/**
 * The floors of `bench/e2e.bench.ts`: the least a Telegram bot can do per message, as a child
 * process of its own like the gateway. A bare long-polling loop over `node:http` with a
 * keep-alive agent (no bot library): `getUpdates` with a 30 s timeout, and for each update,
 * without waiting for the answer before polling again:
 * - text `file`: `sendDocument` of a 100 KiB buffer made once (multipart, `attach://`);
 * - text `big`: `sendDocument` streaming the file `FLOOR_BIG_FILE` from disk;
 * - anything else: `sendMessage` `hi`.
 *
 * With FLOOR_MODEL_ROOT and FLOOR_DB_DIR, the text-only floor instead: the least a bot in front
 * of a model must do per message to keep what docs/durability.md and docs/sessions.md promise,
 * each step as plainly as Node and better-sqlite3 allow (no library above them), with a
 * journal and a state database as the gateway has (e2e-floor-db.mjs), on the main thread or,
 * with FLOOR_DB_THREADS=1, each on a thread of its own as docs/durability.md ("Off the event
 * loop") has the gateway's:
 * - every polled batch recorded in one journal transaction and the journal's log flushed
 *   (`fdatasync`) before the next `getUpdates` confirms it;
 * - for each message: its chat's conversation (read from the database once, then kept in
 *   memory, as the gateway's conversation cache does), the model asked with it and the message
 *   (`stream: true`, the server-sent events parsed once the answer is whole), the message and
 *   the answer appended to the conversation in one transaction, the answer sent with
 *   `sendMessage`, and the message marked answered.
 * It leaves out everything else the gateway does (sessions, the sandbox, admins, logs, the
 * reply outbox's records, a crash's recovery): a floor, not a gateway.
 *
 * Env: FLOOR_API_ROOT (http://127.0.0.1:<port>), FLOOR_TOKEN, FLOOR_BIG_FILE (optional);
 * FLOOR_MODEL_ROOT (the model's base URL, `…/v1`) and FLOOR_DB_DIR (a directory for the two
 * databases) together; FLOOR_DB_THREADS (optional).
 * Runs until it is killed.
 */
import { randomBytes } from "node:crypto";
import { createReadStream, mkdirSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import http from "node:http";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { openDatabase } from "./e2e-floor-db.mjs";

const root = new URL(process.env.FLOOR_API_ROOT ?? "");
const token = process.env.FLOOR_TOKEN ?? "";
const bigFile = process.env.FLOOR_BIG_FILE;
const modelRoot = process.env.FLOOR_MODEL_ROOT ? new URL(process.env.FLOOR_MODEL_ROOT) : undefined;
const dbDir = process.env.FLOOR_DB_DIR;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
const small = randomBytes(100 * 1024);
const boundary = "mediagate-floor-bot-boundary";

/** POSTs to `path` of `base`; `write` sends the body. Resolves with the answer's text. */
function post(base, path, headers, write) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: base.hostname, port: base.port, path, method: "POST", agent, headers },
      (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      },
    );
    req.on("error", reject);
    write(req);
  });
}

/** POSTs to the Bot API's `method`. Resolves with the decoded JSON answer. */
async function request(method, headers, write) {
  return JSON.parse(await post(root, `/bot${token}/${method}`, headers, write));
}

function jsonBody(body) {
  const data = Buffer.from(JSON.stringify(body));
  return [
    { "content-type": "application/json", "content-length": data.length },
    (req) => req.end(data),
  ];
}

function json(method, body) {
  return request(method, ...jsonBody(body));
}

/** `sendDocument` of `size` bytes named `name`, from a buffer or streamed from a path. */
function sendDocument(chatId, name, size, source) {
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="chat_id"\r\n\r\n${chatId}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="document"\r\n\r\nattach://file\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n` +
      "Content-Type: application/octet-stream\r\n\r\n",
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return request(
    "sendDocument",
    {
      "content-type": `multipart/form-data; boundary=${boundary}`,
      "content-length": head.length + size + tail.length,
    },
    (req) => {
      req.write(head);
      if (Buffer.isBuffer(source)) {
        req.write(source);
        req.end(tail);
        return;
      }
      const stream = createReadStream(source, { highWaterMark: 256 * 1024 });
      stream.on("error", (error) => req.destroy(error));
      stream.on("end", () => req.end(tail));
      stream.pipe(req, { end: false });
    },
  );
}

function answer(update) {
  const message = update.message;
  if (message === undefined) return Promise.resolve();
  const chatId = message.chat.id;
  if (message.text === "file") return sendDocument(chatId, "floor.bin", small.length, small);
  if (message.text === "big" && bigFile !== undefined) {
    return sendDocument(chatId, "big.bin", statSync(bigFile).size, bigFile);
  }
  return json("sendMessage", { chat_id: chatId, text: "hi" });
}

const JournalSchema = `CREATE TABLE IF NOT EXISTS journal (
  update_id INTEGER PRIMARY KEY, chat_id INTEGER NOT NULL, text TEXT NOT NULL,
  answered INTEGER NOT NULL DEFAULT 0)`;
const StateSchema = `CREATE TABLE IF NOT EXISTS history (
  id INTEGER PRIMARY KEY, chat_id INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS history_chat ON history (chat_id, id)`;

/**
 * The database file at `path`, made with `schema`: a function that runs a list of
 * `[sql, params]` in one transaction and resolves with their results (e2e-floor-db.mjs), on
 * this thread or, with `threads`, on a worker thread of its own.
 */
function database(path, schema, threads) {
  if (!threads) {
    const run = openDatabase(path, schema);
    return async (calls) => run(calls);
  }
  const worker = new Worker(new URL("./e2e-floor-db.mjs", import.meta.url), {
    workerData: { floorDatabase: true, path, schema },
  });
  worker.on("error", (error) => {
    console.error(`floor bot: database thread: ${String(error)}`);
    process.exit(1);
  });
  const waiting = new Map();
  let next = 0;
  worker.on("message", ({ id, results, error }) => {
    const call = waiting.get(id);
    waiting.delete(id);
    if (error === undefined) call.resolve(results);
    else call.reject(new Error(error));
  });
  return (calls) =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      worker.postMessage({ id, calls });
    });
}

/** The text-only floor over a journal and a state database in `dir` (see the top). */
function textFloor(dir, model, threads) {
  mkdirSync(dir, { recursive: true });
  const journalPath = join(dir, "journal.db");
  const journal = database(journalPath, JournalSchema, threads);
  const state = database(join(dir, "state.db"), StateSchema, threads);
  const conversations = new Map();
  let wal;
  return {
    /** Records `updates` and flushes the log: then they may be confirmed. */
    async record(updates) {
      await journal(
        updates
          .filter((u) => u.message !== undefined)
          .map((u) => [
            "INSERT INTO journal (update_id, chat_id, text) VALUES (?, ?, ?)",
            [u.update_id, u.message.chat.id, u.message.text ?? ""],
          ]),
      );
      wal ??= await open(`${journalPath}-wal`, "r");
      await wal.datasync();
    },
    async answer(update) {
      const { chat, text = "" } = update.message;
      let kept = conversations.get(chat.id);
      if (kept === undefined) {
        const sql = "SELECT role, content FROM history WHERE chat_id = ? ORDER BY id";
        [kept] = await state([[sql, [chat.id]]]);
        conversations.set(chat.id, kept);
      }
      const messages = [...kept, { role: "user", content: text }];
      const events = await post(
        model,
        `${model.pathname.replace(/\/$/, "")}/chat/completions`,
        ...jsonBody({ model: "fake-model", stream: true, messages }),
      );
      let reply = "";
      for (const line of events.split("\n")) {
        if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
        reply += JSON.parse(line.slice(6)).choices?.[0]?.delta?.content ?? "";
      }
      const append = "INSERT INTO history (chat_id, role, content) VALUES (?, ?, ?)";
      await state([
        [append, [chat.id, "user", text]],
        [append, [chat.id, "assistant", reply]],
      ]);
      kept.push({ role: "user", content: text }, { role: "assistant", content: reply });
      const sent = await json("sendMessage", { chat_id: chat.id, text: reply });
      await journal([["UPDATE journal SET answered = 1 WHERE update_id = ?", [update.update_id]]]);
      return sent;
    },
  };
}

// Ended with SIGTERM, it exits as a program does, so that `node --cpu-prof` writes its profile.
process.on("SIGTERM", () => process.exit(0));
const floor =
  modelRoot !== undefined && dbDir !== undefined
    ? textFloor(dbDir, modelRoot, process.env.FLOOR_DB_THREADS === "1")
    : undefined;
let offset = 0;
for (;;) {
  const polled = await json("getUpdates", { offset, timeout: 30 });
  if (!polled.ok) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    continue;
  }
  if (floor !== undefined && polled.result.length > 0) await floor.record(polled.result);
  for (const update of polled.result) {
    offset = update.update_id + 1;
    const answering =
      floor !== undefined && update.message !== undefined ? floor.answer(update) : answer(update);
    answering.then(
      (sent) => {
        if (sent !== undefined && !sent.ok) throw new Error(`floor bot: ${JSON.stringify(sent)}`);
      },
      (error) => {
        console.error(`floor bot: ${String(error)}`);
        process.exit(1);
      },
    );
  }
}
