/**
 * The floor of `bench/e2e.bench.ts`: the least a Telegram bot can do per message, as a child
 * process of its own like the gateway. A bare long-polling loop over `node:http` with a
 * keep-alive agent (no bot library): `getUpdates` with a 30 s timeout, and for each update,
 * without waiting for the answer before polling again:
 * - text `file`: `sendDocument` of a 100 KiB buffer made once (multipart, `attach://`);
 * - text `big`: `sendDocument` streaming the file `FLOOR_BIG_FILE` from disk;
 * - anything else: `sendMessage` `hi`.
 * Env: FLOOR_API_ROOT (http://127.0.0.1:<port>), FLOOR_TOKEN, FLOOR_BIG_FILE (optional).
 * Runs until it is killed.
 */
import { randomBytes } from "node:crypto";
import { createReadStream, statSync } from "node:fs";
import http from "node:http";

const root = new URL(process.env.FLOOR_API_ROOT ?? "");
const token = process.env.FLOOR_TOKEN ?? "";
const bigFile = process.env.FLOOR_BIG_FILE;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
const small = randomBytes(100 * 1024);
const boundary = "mediagate-floor-bot-boundary";

/** POSTs to `method`; `write` sends the body. Resolves with the decoded JSON answer. */
function request(method, headers, write) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: root.hostname,
        port: root.port,
        path: `/bot${token}/${method}`,
        method: "POST",
        agent,
        headers,
      },
      (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    req.on("error", reject);
    write(req);
  });
}

function json(method, body) {
  const data = Buffer.from(JSON.stringify(body));
  return request(
    method,
    { "content-type": "application/json", "content-length": data.length },
    (req) => req.end(data),
  );
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

let offset = 0;
for (;;) {
  const polled = await json("getUpdates", { offset, timeout: 30 });
  if (!polled.ok) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    continue;
  }
  for (const update of polled.result) {
    offset = update.update_id + 1;
    answer(update).then(
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
