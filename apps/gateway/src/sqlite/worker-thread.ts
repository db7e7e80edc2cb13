/**
 * The body of a database worker thread: loads the program module named in `workerData`,
 * opens the database with it, then runs one call at a time, in the order they arrive. Every
 * call is synchronous better-sqlite3 work, so a transaction inside one call stays atomic; a
 * call that waits on the disk holds up only the calls behind it on this database.
 *
 * Calls come in batches (those made while the previous batch ran). A program with `group`
 * and `isolated` methods runs a batch of several as one transaction: each call inside its own
 * savepoint (`isolated`: a call that fails leaves nothing behind and does not fail the
 * others), one commit for all (`group`), and the answers go back only after that commit, so
 * a batch costs one sync of the disk however many calls it holds (group commit). When the
 * commit fails, every call of the batch fails with it: nothing of any was saved.
 */
import { parentPort, workerData } from "node:worker_threads";
import {
  type CallReply,
  type CallRequest,
  isCallBatch,
  toWire,
  type WorkerReply,
  type WorkerStart,
} from "./protocol.js";

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
  if (name === "constructor" || name === "group" || name === "isolated") return undefined;
  if (name in Object.prototype) return undefined;
  const method = program[name];
  return typeof method === "function" ? (method as (...args: unknown[]) => unknown) : undefined;
}

/** Runs `run` inside the program's transaction or savepoint. */
type Wrap = (run: () => unknown) => unknown;

function runCall(program: Program, request: CallRequest, isolated?: Wrap): CallReply {
  try {
    const method = methodOf(program, request.method);
    if (method === undefined) throw new TypeError(`unknown operation ${request.method}`);
    const call = () => method.apply(program, [...request.args]);
    return {
      type: "result",
      id: request.id,
      value: isolated === undefined ? call() : isolated(call),
    };
  } catch (error) {
    return { type: "failure", id: request.id, error: toWire(error) };
  }
}

/** Runs the batch's calls in order, as one transaction when the program groups (see above). */
function runBatch(program: Program, calls: readonly CallRequest[]): CallReply[] {
  const group = program.group;
  const isolated = program.isolated;
  if (
    calls.length < 2 ||
    typeof group !== "function" ||
    typeof isolated !== "function" ||
    calls.some((call) => call.method === "close")
  ) {
    return calls.map((call) => runCall(program, call));
  }
  const inSavepoint: Wrap = (run) => isolated.call(program, run);
  try {
    return group.call(program, () => calls.map((call) => runCall(program, call, inSavepoint)));
  } catch (error) {
    const failure = toWire(error);
    return calls.map((call): CallReply => ({ type: "failure", id: call.id, error: failure }));
  }
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
  port.on("message", (request: unknown) => {
    if (!isCallBatch(request)) return;
    post({ type: "batch", replies: runBatch(program, request.calls) });
  });
  post({ type: "ready" });
}

await main();
