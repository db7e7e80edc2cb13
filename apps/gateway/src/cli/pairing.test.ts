import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { damagePage } from "../../../../test-support/sqlite-damage.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { rootPageOf } from "../../test/fixtures/sqlite-pages.js";
import { emptyEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { SqliteStateStore, stateDbPath } from "../state/store.js";
import {
  PairingCommandError,
  PairingListHeader,
  pairingApprove,
  pairingList,
  pairingRevoke,
} from "./pairing.js";

/** A display name an attacker picks: a terminal colour, a bidi override, a forged row. */
const Hostile = `\x1b[31mEve\u202egnp.exe\n${["main", "approved", "telegram:1", "Admin"].join("\t")}`;
const Escaped = "\\x1b[31mEve\\u202egnp.exe\\nmain\\tapproved\\ttelegram:1\\tAdmin";

describe("mediagate pairing list and approve with hostile display names", () => {
  let dir = "";
  let config = "";
  const now = () => 1_800_000_000_000;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "mg-pairing-cli-"));
    config = join(dir, "mediagate.yaml");
    await writeFile(config, `home: ${dir}\nprofiles:\n  - name: main\n    access: pairing\n`);
    const [profile] = (await loadConfig({ path: config, env: emptyEnv(dir) })).profiles;
    const store = await SqliteStateStore.open(stateDbPath(profile!.home), { now });
    try {
      const limits = { codeTtlMs: 3_600_000, maxPending: 10 };
      await store.requestPairing({ user: "telegram:66", userName: Hostile, chatId: "66" }, limits);
      const second = await store.requestPairing(
        { user: "discord:77", userName: `Mallory\u2066\r\x07`, chatId: "77" },
        limits,
      );
      if (second.status === "full") throw new Error("no code");
      await store.approvePairing(second.code, "telegram:1");
    } finally {
      await store.close();
    }
  });

  afterAll(async () => {
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  const run = async (fn: (print: (line: string) => void) => Promise<number>) => {
    const lines: string[] = [];
    const code = await fn((line) => lines.push(line));
    return { code, lines };
  };

  it("prints control characters, bidi overrides and line breaks in names escaped, one row each", async () => {
    const { code, lines } = await run((print) =>
      pairingList({ config, env: emptyEnv(dir), now }, print),
    );
    expect(code).toBe(0);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe(PairingListHeader);
    const pending = lines[1]!.split("\t");
    expect(pending.slice(0, 4)).toEqual(["main", "pending", "telegram:66", Escaped]);
    expect(lines[2]!.split("\t").slice(0, 4)).toEqual([
      "main",
      "approved",
      "discord:77",
      "Mallory\\u2066\\r\\x07",
    ]);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: none may be printed
    expect(lines.join("\n")).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f\u202e\u2066]/);
  });

  it("fails on stderr, not in its output, when there is no such code or nothing to revoke", async () => {
    const printed: string[] = [];
    const print = (line: string) => printed.push(line);
    await expect(
      pairingApprove("ZZZZ-ZZZZ", { config, env: emptyEnv(dir), now }, print),
    ).rejects.toThrow(
      new PairingCommandError(
        "no pending code ZZZZ-ZZZZ in profile main (mistyped, already used, revoked or expired; see `mediagate pairing list`)",
      ),
    );
    await expect(
      pairingRevoke("telegram:404", { config, env: emptyEnv(dir), now }, print),
    ).rejects.toThrow(
      new PairingCommandError("nothing to revoke: no approval or pending code of telegram:404"),
    );
    expect(printed).toEqual([]);
  });

  it("prints the approved user's name escaped", async () => {
    const list = await run((print) => pairingList({ config, env: emptyEnv(dir), now }, print));
    const code = list.lines[1]!.split("\t")[4]!;
    const { lines } = await run((print) =>
      pairingApprove(code, { config, env: emptyEnv(dir), now }, print),
    );
    expect(lines).toEqual([
      `approved telegram:66 (${Escaped}) in profile main: they may use the bot now (not as an admin)`,
    ]);
  });
});

describe("mediagate pairing and the integrity check", () => {
  it("does not read the whole file first: a damaged page it does not read leaves it working", async () => {
    const dir = await tempDirForTest("mg-pairing-cli-");
    const config = join(dir, "mediagate.yaml");
    await writeFile(config, `home: ${dir}\nprofiles:\n  - name: main\n    access: pairing\n`);
    const [profile] = (await loadConfig({ path: config, env: emptyEnv(dir) })).profiles;
    const path = stateDbPath(profile!.home);
    const store = await SqliteStateStore.open(path);
    try {
      const sessionId = await store.currentSessionId("agent:main:telegram:dm:66");
      await store.appendHistory(sessionId, [{ role: "user", content: "hello" }]);
      await store.requestPairing(
        { user: "telegram:66", userName: "Ann", chatId: "66" },
        { codeTtlMs: 3_600_000, maxPending: 10 },
      );
    } finally {
      await store.close();
    }
    damagePage(path, rootPageOf(path, "messages"));
    await expect(SqliteStateStore.open(path)).rejects.toMatchObject({ damaged: true });

    const lines: string[] = [];
    const code = await pairingList({ config, env: emptyEnv(dir) }, (line) => lines.push(line));

    expect(code).toBe(0);
    expect(lines[1]?.split("\t").slice(0, 4)).toEqual(["main", "pending", "telegram:66", "Ann"]);
  });
});
