import { Worker } from "node:worker_threads";
import { settledWithin } from "@mediagate/io";
import { Defaults } from "../defaults.js";
import {
  type CallReply,
  type CallRequest,
  StopMessage,
  toWire,
  type WireError,
  type WorkerReply,
  type WorkerStart,
} from "./protocol.js";

/** Why a call failed, as {@link DatabaseWorkerOptions.revive} sees it. */
export interface CallFailure {
  /** The operation (method name; `open` while opening, `close` while closing). */
  readonly operation: string;
  /**
   * What went wrong. An error thrown in the thread keeps its name, code and fields. A thread
   * that stopped gives `name: "DatabaseWorkerStopped"`; a call after `close()`
   * `"DatabaseWorkerClosed"`; a close that gave up waiting `"DatabaseWorkerCloseTimeout"`; a
   * call in flight or made after `abandon()` `"DatabaseWorkerAbandoned"`.
   */
  readonly error: WireError;
}

/** Options of {@link DatabaseWorker.start}. */
export interface DatabaseWorkerOptions {
  /**
   * URL of the program module run in the thread (see {@link programUrl}). It exports
   * `openInWorker(path, settings)`, which opens the database synchronously and returns an
   * object whose methods are the operations.
   */
  readonly program: URL;
  /** The database file, handed to `openInWorker`. */
  readonly path: string;
  /** Structured-cloneable settings handed to `openInWorker`. */
  readonly settings: unknown;
  /**
   * What the thread calls itself on Linux (`/proc/thread-self/comm`, at most 15 characters):
   * the name `top -H`, `ps -L` and `bench:e2e` show for it, where Node names every thread
   * `node`. Elsewhere, or without /proc, it keeps the name it has.
   */
  readonly threadName?: string | undefined;
  /** Builds the error a failed call rejects with (the caller's own error classes). */
  readonly revive: (failure: CallFailure) => Error;
  /**
   * How long `close()` waits for the calls in flight and the final checkpoint before it
   * gives up on them (they reject) and lets the thread go. Default:
   * `Defaults.database.closeTimeoutMs`.
   */
  readonly closeTimeoutMs?: number;
}

export const DatabaseWorkerDefaults = {
  closeTimeoutMs: Defaults.database.closeTimeoutMs,
} as const satisfies Required<Pick<DatabaseWorkerOptions, "closeTimeoutMs">>;

/** The operations of a program object: its methods, as promises of their results. */
type Operation<P, K extends keyof P> = P[K] extends (...args: infer A) => infer R
  ? (...args: A) => Promise<Awaited<R>>
  : never;

interface Pending {
  readonly operation: string;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/**
 * `url` of a sibling module of `base` (an `import.meta.url`), with the extension `base` has:
 * `.ts` when running from source (the tests), `.js` when built.
 */
export function programUrl(relative: string, base: string): URL {
  const url = new URL(relative, base);
  if (base.endsWith(".ts")) url.pathname = url.pathname.replace(/\.js$/, ".ts");
  return url;
}

/**
 * Starts the worker thread. Built code runs `worker-thread.js` directly; from TypeScript
 * source (the test suites run `src/` through vitest) both modules are compiled first (see
 * source-bundle.ts).
 */
async function spawn(data: WorkerStart): Promise<Worker> {
  const entry = programUrl("./worker-thread.js", import.meta.url);
  if (!entry.pathname.endsWith(".ts")) return new Worker(entry, { workerData: data });
  const { compileForWorker } = await import("./source-bundle.js");
  const compiled = compileForWorker(entry, new URL(data.program));
  return new Worker(compiled.entry, { workerData: { ...data, program: compiled.program.href } });
}

/**
 * One database file in its own worker thread: its synchronous SQLite work never blocks the
 * event loop, so a slow or frozen disk delays only the calls on this database. Calls run in
 * the order they are made. A thread that dies rejects every call in flight and every later
 * one with a `DatabaseWorkerStopped` failure; nothing hangs.
 *
 * The thread keeps the process alive only while calls are in flight.
 */
export class DatabaseWorker<P extends object> {
  readonly path: string;
  readonly #worker: Worker;
  /** The thread's stop flag (`WorkerStart.stop`), set when it is let go (`#letGo`). */
  readonly #stopFlag: Int32Array;
  readonly #revive: (failure: CallFailure) => Error;
  readonly #closeTimeoutMs: number;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  /** Calls made while a batch is in flight, sent together once it is answered. */
  #queued: CallRequest[] = [];
  /** The last call of each batch posted and not answered yet. */
  readonly #batchEnds = new Set<number>();
  /** A flush is queued as a microtask: the calls made until it runs go in one batch. */
  #flushQueued = false;
  #calls = 0;
  #messages = 0;
  /** Set once the thread is gone or closed: later calls reject with it. */
  #stopped: WireError | undefined;
  #closing: Promise<void> | undefined;

  private constructor(worker: Worker, stop: SharedArrayBuffer, options: DatabaseWorkerOptions) {
    this.path = options.path;
    this.#worker = worker;
    this.#stopFlag = new Int32Array(stop);
    this.#revive = options.revive;
    this.#closeTimeoutMs = options.closeTimeoutMs ?? DatabaseWorkerDefaults.closeTimeoutMs;
    // A batch is answered in one message (worker-thread.ts), in the order of its calls.
    worker.on("message", (replies: WorkerReply | readonly CallReply[]) => {
      if (!Array.isArray(replies)) return;
      for (const reply of replies as readonly CallReply[]) this.#settle(reply);
    });
    worker.on("error", (error) => this.#stop(stoppedBecause(error)));
    worker.on("exit", (code) => this.#stop(stoppedBecause(`exit code ${code}`)));
  }

  /**
   * Starts the thread and opens the database in it. Rejects with the revived open failure
   * (operation `open`), after which the thread is gone.
   */
  static async start<P extends object>(options: DatabaseWorkerOptions): Promise<DatabaseWorker<P>> {
    const stop = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
    const worker = await spawn({
      program: options.program.href,
      path: options.path,
      settings: options.settings,
      threadName: options.threadName,
      stop,
    });
    try {
      await new Promise<void>((resolve, reject) => {
        const fail = (error: WireError) => reject(options.revive({ operation: "open", error }));
        const onExit = (code: number) => fail(stoppedBecause(`exit code ${code}`));
        const onError = (error: Error) => fail(stoppedBecause(error));
        worker.once("exit", onExit);
        worker.once("error", onError);
        worker.once("message", (reply: WorkerReply) => {
          worker.off("exit", onExit);
          worker.off("error", onError);
          if (reply.type === "ready") resolve();
          else if (reply.type === "open-failed") fail(reply.error);
          else fail(stoppedBecause(`unexpected ${reply.type} before ready`));
        });
      });
    } catch (error) {
      await worker.terminate();
      throw error;
    }
    worker.unref();
    return new DatabaseWorker<P>(worker, stop, options);
  }

  /** Runs `method` of the program in the thread. */
  call<K extends keyof P & string>(
    method: K,
    ...args: Parameters<Operation<P, K>>
  ): ReturnType<Operation<P, K>> {
    return this.#call(method, args) as ReturnType<Operation<P, K>>;
  }

  #call(method: string, args: readonly unknown[]): Promise<unknown> {
    const refused = this.#stopped ?? (this.#closing === undefined ? undefined : Closed);
    if (refused !== undefined) {
      return Promise.reject(this.#revive({ operation: method, error: refused }));
    }
    return this.#send(method, args);
  }

  /**
   * Queues the call. When no batch is in flight it is posted once the code that made it has
   * run to its next wait (a microtask), with every call made until then: calls made together
   * (`Promise.all([a(), b()])`, or one not awaited before the next) cost the thread one message
   * and share one commit. When a batch is in flight, the call waits and goes with the calls
   * queued behind it in one message once the thread has answered that batch (it runs calls one
   * at a time in order anyway, so the wait costs nothing but a thread hop). Each call still
   * runs on its own and is answered on its own, in the order made.
   */
  #send(method: string, args: readonly unknown[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      if (this.#pending.size === 0) this.#worker.ref();
      this.#pending.set(id, { operation: method, resolve, reject });
      this.#calls++;
      this.#queued.push({ id, method, args });
      if (this.#batchEnds.size === 0 && !this.#flushQueued) {
        this.#flushQueued = true;
        queueMicrotask(this.#queuedFlush);
      }
    });
  }

  readonly #queuedFlush = (): void => {
    this.#flushQueued = false;
    if (this.#batchEnds.size === 0) this.#flush();
  };

  /** Posts the queued calls as one batch (one each when the batch cannot be cloned). */
  #flush(): void {
    const batch = this.#queued;
    if (batch.length === 0) return;
    this.#queued = [];
    if (this.#post(batch)) return;
    // An argument that cannot be cloned (a function, a symbol): that call is refused here,
    // not sent; the others go on alone, in order.
    for (const request of batch) this.#post([request]);
  }

  #post(batch: readonly CallRequest[]): boolean {
    const last = batch[batch.length - 1] as CallRequest;
    try {
      this.#worker.postMessage(batch);
    } catch (error) {
      if (batch.length > 1) return false;
      const pending = this.#take(last.id);
      pending?.reject(this.#revive({ operation: last.method, error: toWire(error) }));
      return true;
    }
    this.#messages++;
    this.#batchEnds.add(last.id);
    return true;
  }

  /**
   * How many calls were made and how many messages carried them to the thread: calls made
   * while the thread is busy share one (bench/README.md, issue 31).
   */
  get stats(): { readonly calls: number; readonly messages: number } {
    return { calls: this.#calls, messages: this.#messages };
  }

  #take(id: number): Pending | undefined {
    const pending = this.#pending.get(id);
    this.#pending.delete(id);
    if (this.#pending.size === 0) this.#worker.unref();
    return pending;
  }

  #settle(reply: CallReply): void {
    const pending = this.#take(reply.id);
    if (this.#batchEnds.delete(reply.id) && this.#batchEnds.size === 0) this.#flush();
    if (pending === undefined) return;
    if (reply.type === "result") pending.resolve(reply.value);
    else pending.reject(this.#revive({ operation: pending.operation, error: reply.error }));
  }

  #stop(reason: WireError): void {
    this.#stopped ??= reason;
    this.#queued = [];
    this.#batchEnds.clear();
    for (const id of [...this.#pending.keys()]) {
      const pending = this.#take(id);
      pending?.reject(this.#revive({ operation: pending.operation, error: this.#stopped }));
    }
  }

  /**
   * Runs the program's `close` (which closes the database: the WAL is checkpointed), then ends
   * the thread. Calls made before `close()` finish first; calls after it reject. If that takes
   * longer than `closeTimeoutMs` (a frozen disk), the calls still waiting reject and the thread
   * is left to end on its own, without keeping the process alive. Safe to call twice.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /**
   * Gives the thread up without waiting for it, for work whose result is no longer wanted (an
   * integrity check of a database being closed): the calls in flight and later ones reject at
   * once with a `DatabaseWorkerAbandoned` failure, and the thread no longer keeps the process
   * alive. It ends once it is out of the call it is in (Node cannot interrupt native code),
   * running none after it (`#letGo`). Not for a database that was written: nothing is
   * checkpointed (use {@link close}). Safe to call twice.
   */
  abandon(): void {
    if (this.#stopped !== undefined) return;
    const error: WireError = {
      name: "DatabaseWorkerAbandoned",
      message: "the database worker was given up before it answered",
      fields: {},
    };
    this.#stop(error);
    this.#letGo();
  }

  /**
   * Lets the thread go without cutting short a call it may be inside: it is told to stop (the
   * flag it reads between calls, and a message for when it is idle), runs no further call and
   * ends itself, its database closing with it; until then it runs on, unreferenced.
   *
   * Never `worker.terminate()` while a call may be in SQLite: a terminated thread whose SQLite
   * call then fails aborts the whole process. better-sqlite3 12 builds that call's error with a
   * `ToLocalChecked()` a terminating thread cannot satisfy ("FATAL ERROR: v8::ToLocalChecked
   * Empty MaybeLocal", seen when a test's integrity check, abandoned while it waited on a lock,
   * got its `SQLITE_BUSY`; better-sqlite3 13 fixes it, and needs Node 22).
   */
  #letGo(): void {
    Atomics.store(this.#stopFlag, 0, 1);
    this.#worker.unref();
    this.#worker.postMessage(StopMessage);
  }

  async #close(): Promise<void> {
    if (this.#stopped !== undefined) return;
    const closed = this.#send("close", []);
    if (await settledWithin(closed, this.#closeTimeoutMs, { unref: true })) {
      this.#stopped ??= Closed;
      await this.#worker.terminate();
      await closed; // a close that failed rejects with its error
      return;
    }
    const error: WireError = {
      name: "DatabaseWorkerCloseTimeout",
      message: `the database did not close within ${this.#closeTimeoutMs} ms (the disk may be stalled); the calls still waiting were given up`,
      fields: {},
    };
    this.#stopped ??= error;
    this.#stop(error);
    // The thread may be blocked in a system call; it ends when that returns, unreferenced
    // until then, so a stalled disk does not hold up the process's exit.
    this.#letGo();
    throw this.#revive({ operation: "close", error });
  }
}

const Closed: WireError = {
  name: "DatabaseWorkerClosed",
  message: "the database is closed",
  fields: {},
};

function stoppedBecause(cause: Error | string): WireError {
  const detail = typeof cause === "string" ? cause : `${cause.name}: ${cause.message}`;
  return {
    name: "DatabaseWorkerStopped",
    message: `the database worker thread stopped unexpectedly (${detail})`,
    fields: {},
    cause: typeof cause === "string" ? undefined : toWire(cause),
  };
}
