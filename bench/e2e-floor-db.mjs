/**
 * The text-only floor's databases (e2e-floor-bot.mjs). `openDatabase` opens one SQLite file as
 * the gateway opens its own (WAL, `synchronous = NORMAL`) and returns a function that runs a
 * list of `[sql, params]` in one transaction on the calling thread: the rows of each read, the
 * changes of each write. Loaded as a worker thread (`workerData.floorDatabase`), it opens the
 * file named in `workerData` and does that for each `{ id, calls }` its parent posts, posting
 * `{ id, results }` or `{ id, error }` back: one message each way per call, nothing batched.
 */
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";

export function openDatabase(path, schema) {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec(schema);
  const statements = new Map();
  const prepared = (sql) => {
    const kept = statements.get(sql);
    if (kept !== undefined) return kept;
    const statement = db.prepare(sql);
    statements.set(sql, statement);
    return statement;
  };
  return db.transaction((calls) =>
    calls.map(([sql, params]) => {
      const statement = prepared(sql);
      return statement.reader ? statement.all(...params) : statement.run(...params).changes;
    }),
  );
}

if (!isMainThread && workerData?.floorDatabase) {
  const run = openDatabase(workerData.path, workerData.schema);
  parentPort.on("message", ({ id, calls }) => {
    try {
      parentPort.postMessage({ id, results: run(calls) });
    } catch (error) {
      parentPort.postMessage({ id, error: String(error) });
    }
  });
}
