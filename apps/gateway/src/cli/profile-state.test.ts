import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { emptyEnv } from "../config/env.js";
import { PostgresDatabase } from "../postgres/database.js";
import { PostgresStateStore } from "../state/postgres-store.js";
import { pairingApprove, pairingList } from "./pairing.js";
import { usageReport } from "./usage.js";

let testDatabase: TestDatabase;
beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("cli_state");
});
afterAll(async () => {
  await testDatabase?.drop();
});

describe("pairing and usage commands on the PostgreSQL store", () => {
  it("read and write the database the config names, never a state.db", async () => {
    const home = await tempDirForTest("mg-cli-pg-");
    const file = join(home, "mediagate.yaml");
    await writeFile(
      file,
      `home: ${home}\nstore: { kind: postgres, url: "\${DATABASE_URL}" }\nprofiles:\n  - name: default\n    telegram: { token: "1:a-token" }\n    access: pairing\n`,
    );
    const env = { ...emptyEnv(home), variables: { DATABASE_URL: testDatabase.url } };
    const database = new PostgresDatabase({ url: testDatabase.url });
    try {
      const gateway = await PostgresStateStore.open(database, "default");
      const issued = await gateway.requestPairing(
        { user: "telegram:5", userName: "ann", chatId: "5" },
        { codeTtlMs: 3_600_000, maxPending: 3 },
      );
      if (issued.status !== "issued") throw new Error(issued.status);
      await gateway.recordUsage({
        sessionKey: "k",
        sessionId: "s",
        user: "telegram:5",
        model: "small",
        inputTokens: 7,
        outputTokens: 3,
        cachedTokens: 0,
        cost: 0,
      });

      const listed: string[] = [];
      expect(await pairingList({ config: file, env }, (l) => listed.push(l))).toBe(0);
      expect(listed.join("\n")).toContain("telegram:5");
      const approved: string[] = [];
      expect(
        await pairingApprove(issued.code, { config: file, env }, (l) => approved.push(l)),
      ).toBe(0);
      expect(await gateway.isPaired("telegram:5")).toBe(true);
      const usage: string[] = [];
      expect(await usageReport({ config: file, env }, (l) => usage.push(l))).toBe(0);
      expect(usage.join("\n")).toMatch(/default\ttelegram:5\ttoday\t1\t7\t0\t3\t0.00/);
      expect(existsSync(join(home, "state.db"))).toBe(false);
    } finally {
      await database.close();
    }
  });

  it("change no schema: a database without mediagate's tables has nothing, an older schema is refused", async () => {
    // A newer CLI beside a cluster that runs an older version: migrating the schema would
    // start the cluster's upgrade, and its replicas could not restart (docs/operations.md).
    const other = await freshPostgresDatabase("cli_state_old");
    const home = await tempDirForTest("mg-cli-pg-old-");
    const file = join(home, "mediagate.yaml");
    await writeFile(
      file,
      `home: ${home}\nstore: { kind: postgres, url: "\${DATABASE_URL}" }\nprofiles:\n  - name: default\n    telegram: { token: "1:a-token" }\n    access: pairing\n`,
    );
    const env = { ...emptyEnv(home), variables: { DATABASE_URL: other.url } };
    const database = new PostgresDatabase({ url: other.url });
    const tables = async () =>
      (
        await database.query<{ present: boolean }>(
          "test",
          "SELECT to_regclass('mediagate_schema') IS NOT NULL AS present",
        )
      ).rows[0]?.present;
    try {
      const listed: string[] = [];
      expect(await pairingList({ config: file, env }, (l) => listed.push(l))).toBe(0);
      expect(listed.join("\n")).toMatch(/no pending codes and no approved users/);
      expect(await tables()).toBe(false);

      await PostgresStateStore.open(database, "default");
      const version = async () =>
        (
          await database.query<{ version: number }>(
            "test",
            "SELECT version FROM mediagate_schema WHERE component = 'state'",
          )
        ).rows[0]?.version;
      const latest = await version();
      await database.query(
        "test",
        "UPDATE mediagate_schema SET version = version - 1 WHERE component = 'state'",
      );
      const refused = await usageReport({ config: file, env }, () => {}).catch(
        (error: unknown) => error,
      );
      expect(refused).toMatchObject({
        code: "MG_CLI_STORE_SCHEMA_OLDER",
        message: expect.stringMatching(
          /older than this mediagate's .*run the mediagate version the gateway runs/,
        ),
      });
      expect(await version()).toBe((latest ?? 0) - 1);
    } finally {
      await database.close();
      await other.drop();
    }
  });
});
