/**
 * The body of a database worker thread: loads the program module named in `workerData`,
 * opens the database with it, then runs one call at a time, in the order they arrive (in
 * batches of the calls made while the previous batch ran, see database-worker.ts). Every
 * call is synchronous better-sqlite3 work, so a transaction inside one call stays atomic; a
 * call that waits on the disk holds up only the calls behind it on this database.
 */
import { parentPort, workerData } from "node:worker_threads";
import { isCallRequest, toWire, type WorkerReply, type WorkerStart } from "./protocol.js";

type Program = Record<string, unknown>;

function isWorkerStart(value: unknown): value is WorkerStart {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return typeof record.program === "string" && typeof record.path === "string";
}

async function openProgram(start: WorkerStart): Promise<Program> {
  const module: Record<string, unknown> = await import(start.program);
  const open = module.openInWorker;
  if (typeof open !== "function") {
    throw new TypeError(`${start.program} does not export openInWorker`);
  }
  const program: unknown = open(start.path, start.settings);
  if (typeof program !== "object" || program === null) {
    throw new TypeError(`${start.program}: openInWorker returned no program`);
  }
  return program as Program;
}

/** Only the program's own methods may be called, never `constructor` or `Object` methods. */
function methodOf(program: Program, name: string): ((...args: unknown[]) => unknown) | undefined {
  if (name === "constructor" || name in Object.prototype) return undefined;
  const method = program[name];
  return typeof method === "function" ? (method as (...args: unknown[]) => unknown) : undefined;
}

async function main(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error("worker-thread.ts runs only as a worker thread");
  const post = (reply: WorkerReply) => port.postMessage(reply);
  if (!isWorkerStart(workerData)) throw new TypeError("database worker started without its data");
  let program: Program;
  try {
    program = await openProgram(workerData);
  } catch (error) {
    post({ type: "open-failed", error: toWire(error) });
    return;
  }
  // Calls come in batches (an array, in the order made); each runs and is answered alone.
  port.on("message", (batch: unknown) => {
    if (!Array.isArray(batch)) return;
    for (const request of batch) {
      if (!isCallRequest(request)) continue;
      try {
        const method = methodOf(program, request.method);
        if (method === undefined) throw new TypeError(`unknown operation ${request.method}`);
        post({ type: "result", id: request.id, value: method.apply(program, [...request.args]) });
      } catch (error) {
        post({ type: "failure", id: request.id, error: toWire(error) });
      }
    }
  });
  post({ type: "ready" });
}

await main();
