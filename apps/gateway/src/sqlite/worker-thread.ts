/**
 * The body of a database worker thread: loads the program module named in `workerData`,
 * opens the database with it, then runs one call at a time, in the order they arrive (in
 * batches of the calls made while the previous batch ran, see database-worker.ts; a batch's
 * calls share one commit when the program allows it, see grouped-commits.ts). Every call is
 * synchronous better-sqlite3 work, so each stays atomic; a call that waits on the disk holds
 * up only the calls behind it on this database.
 */
import { writeFileSync } from "node:fs";
import { type MessagePort, parentPort, workerData } from "node:worker_threads";
import type { GroupedCommits } from "./grouped-commits.js";
import {
  type CallReply,
  type CallRequest,
  isCallRequest,
  StopMessage,
  toWire,
  type WorkerReply,
  type WorkerStart,
} from "./protocol.js";

type Program = Record<string, unknown>;

function isWorkerStart(value: unknown): value is WorkerStart {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.program === "string" &&
    typeof record.path === "string" &&
    record.stop instanceof SharedArrayBuffer
  );
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

/**
 * Names this thread for the people and tools reading the process (`top -H`, `ps -L`,
 * `bench:e2e`'s thread split), on Linux. Nothing depends on it: where there is no
 * `/proc/thread-self` the thread keeps its name, and that is all.
 */
function nameThisThread(name: string | undefined): void {
  if (name === undefined) return;
  try {
    writeFileSync("/proc/thread-self/comm", name.slice(0, 15));
  } catch {
    // Not Linux, or no /proc: the name is only ever read by people.
  }
}

/** Only the program's own methods may be called, never `constructor` or `Object` methods. */
function methodOf(program: Program, name: string): ((...args: unknown[]) => unknown) | undefined {
  if (name === "constructor" || name in Object.prototype) return undefined;
  const method = program[name];
  return typeof method === "function" ? (method as (...args: unknown[]) => unknown) : undefined;
}

/** The program's {@link GroupedCommits}, when it offers them (as `grouped`). */
function groupedOf(program: Program): GroupedCommits | undefined {
  const grouped = program.grouped as GroupedCommits | undefined;
  return typeof grouped?.inOneTransaction === "function" ? grouped : undefined;
}

function invoke(program: Program, request: CallRequest): unknown {
  const method = methodOf(program, request.method);
  if (method === undefined) throw new TypeError(`unknown operation ${request.method}`);
  return method.apply(program, [...request.args]);
}

function alone(program: Program, request: CallRequest): CallReply {
  try {
    return { type: "result", id: request.id, value: invoke(program, request) };
  } catch (error) {
    return { type: "failure", id: request.id, error: toWire(error) };
  }
}

/**
 * Runs `run` (two calls or more) in one transaction, each call a unit of its own inside it: a
 * call that throws keeps none of its writes and the others keep theirs. Answered only once the
 * commit is done, so no answer tells of a write that is not in the database. When the commit
 * fails, or SQLite ended the transaction itself (a full disk, an I/O error), nothing of the run
 * was written: every call of it fails with that error (a call that failed on its own keeps its
 * own).
 */
function together(
  program: Program,
  grouped: GroupedCommits,
  run: CallRequest[],
  letGo: () => boolean,
): CallReply[] {
  const replies: CallReply[] = [];
  try {
    grouped.inOneTransaction(() => {
      for (const request of run) {
        // Its callers were answered already (rejected): none of the run may commit. The error
        // only rolls the transaction back; no caller is left to read it.
        if (letGo()) throw new Error("the database thread was let go");
        try {
          const value = grouped.atomically(() => invoke(program, request));
          replies.push({ type: "result", id: request.id, value });
        } catch (error) {
          if (!grouped.inTransaction) throw error;
          replies.push({ type: "failure", id: request.id, error: toWire(error) });
        }
      }
    });
    return replies;
  } catch (error) {
    const ended = toWire(error);
    const failed = new Map(
      replies.flatMap((reply) => (reply.type === "failure" ? [[reply.id, reply]] : [])),
    );
    return run.map(
      (request) => failed.get(request.id) ?? { type: "failure", id: request.id, error: ended },
    );
  }
}

/**
 * Posts a batch's answers in one message. When one of them cannot be cloned (a value no
 * program should return, but a bug must not stop the thread), each goes alone, and the one that
 * cannot is answered with the clone's failure: the other calls still get theirs.
 */
function answer(port: MessagePort, replies: readonly CallReply[]): void {
  try {
    port.postMessage(replies);
    return;
  } catch {
    // Sent one by one below.
  }
  for (const reply of replies) {
    try {
      port.postMessage([reply]);
    } catch (error) {
      port.postMessage([{ type: "failure", id: reply.id, error: toWire(error) }]);
    }
  }
}

/**
 * Runs a batch in its order and answers it in one message. Consecutive calls the program lets
 * share a transaction run as one ({@link together}); the rest run alone, as their own
 * transactions. Once `letGo()` is true no further call starts.
 */
function runBatch(
  program: Program,
  grouped: GroupedCommits | undefined,
  batch: readonly unknown[],
  letGo: () => boolean,
): CallReply[] {
  const replies: CallReply[] = [];
  let run: CallRequest[] = [];
  const endRun = () => {
    if (grouped !== undefined && run.length > 1) {
      replies.push(...together(program, grouped, run, letGo));
    } else {
      for (const request of run) if (!letGo()) replies.push(alone(program, request));
    }
    run = [];
  };
  for (const request of batch) {
    if (letGo()) break;
    if (!isCallRequest(request)) continue;
    if (grouped?.groupable(request.method) === true) {
      run.push(request);
      continue;
    }
    endRun();
    if (!letGo()) replies.push(alone(program, request));
  }
  endRun();
  return replies;
}

async function main(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error("worker-thread.ts runs only as a worker thread");
  const post = (reply: WorkerReply) => port.postMessage(reply);
  if (!isWorkerStart(workerData)) throw new TypeError("database worker started without its data");
  nameThisThread(workerData.threadName);
  let program: Program;
  try {
    program = await openProgram(workerData);
  } catch (error) {
    post({ type: "open-failed", error: toWire(error) });
    return;
  }
  const grouped = groupedOf(program);
  const stop = new Int32Array(workerData.stop);
  const letGo = () => Atomics.load(stop, 0) !== 0;
  // Calls come in batches (an array, in the order made), and are answered in one. Let go, the
  // thread ends itself here, out of SQLite; its database closes with it (better-sqlite3
  // closes a thread's connections when the thread ends).
  port.on("message", (batch: unknown) => {
    if (Array.isArray(batch) && !letGo()) answer(port, runBatch(program, grouped, batch, letGo));
    if (batch === StopMessage || letGo()) process.exit(0);
  });
  post({ type: "ready" });
}

await main();
