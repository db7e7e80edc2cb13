import { freshPostgresDatabase, type TestDatabase } from "../../test-support/postgres.js";
import { persistentCrashLoop } from "./durability/persistent-crash-loop.js";

/**
 * crash-loop-persistent's SIGKILL loop (issue 9) with `store: { kind: postgres }` (issue 28):
 * the journal, outbox and state of the real `mediagate start` live in a database of the test
 * cluster, not in SQLite files. Same traffic and the same checks, fewer messages and kills so
 * it runs beside the SQLite loop in the long suite.
 */
let db: TestDatabase | undefined;

persistentCrashLoop({
  name: "crash-loop-postgres",
  title: "SIGKILL loop on a persistent profile, store PostgreSQL",
  prefix: "crash-pg",
  users: [7201, 7202, 7203, 7204, 7205],
  messages: 60,
  kills: 12,
  concurrency: 4,
  settings: async () => {
    db = await freshPostgresDatabase("crash_loop");
    return { store: { kind: "postgres", url: db.url } };
  },
  dispose: async () => {
    await db?.drop();
  },
});
