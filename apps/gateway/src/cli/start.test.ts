import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { testEnvironment } from "../../../../test-support/engine.js";
import { damageHeader } from "../../../../test-support/sqlite-damage.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { readEnv } from "../config/env.js";
import { journalDbPath, SqliteJournal } from "../durable/journal.js";
import { runStart } from "./start.js";

/** The process events `mediagate start` listens on while it runs. */
const Events = ["uncaughtException", "unhandledRejection", "SIGINT", "SIGTERM"] as const;

const listening = () => Events.map((event) => process.listenerCount(event));

/** Runs against the real Docker engine (the busybox test image is present). */
describe("mediagate start", () => {
  it("leaves no listener on the process when it fails (a damaged journal)", async () => {
    const dir = await tempDirForTest("mg-start-");
    const home = join(dir, "home");
    const config = join(dir, "mediagate.yaml");
    await writeFile(
      config,
      `home: ${home}\nprofiles:\n  - name: start-test\n    sandbox: { image: mediagate-sandbox:test, diskLimitBytes: 0 }\n`,
    );
    const journal = await SqliteJournal.open(journalDbPath(home));
    await journal.close();
    damageHeader(journalDbPath(home));
    // Loaded, the sandbox's lock library (proper-lockfile, through signal-exit) listens on
    // SIGINT and SIGTERM for the process's life; `start` loads the sandbox lazily, so loaded
    // here first those are in the count before, as when another test file loaded it earlier.
    await import("@mediagate/sandbox");
    const before = listening();

    const failed = await runStart({ config, env: readEnv(testEnvironment(dir)) }).catch(
      (error: unknown) => error,
    );

    expect(failed).toMatchObject({ damaged: true });
    expect(listening()).toEqual(before);
  });
});
