import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StateSchemaError } from "./errors.js";
import { MIGRATIONS, type Migration, migrate, schemaVersion } from "./schema.js";

let db: Database.Database;

beforeEach(() => {
  db = new Database(":memory:");
});

afterEach(() => {
  db.close();
});

function tables(): string[] {
  return db
    .prepare<[], { name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .all()
    .map((row) => row.name);
}

describe("migrate", () => {
  it("brings an empty database to the latest version", () => {
    expect(migrate(db)).toEqual({ from: 0, to: MIGRATIONS.at(-1)!.version });
    expect(tables()).toEqual([
      "approvals",
      "messages",
      "paired_users",
      "pairing_codes",
      "pairing_guard",
      "session_models",
      "sessions",
      "summaries",
      "task_runs",
      "tasks",
      "usage",
      "user_timezones",
    ]);
  });

  it("adds the pairing tables to a version 2 database, keeping its sessions and history", () => {
    migrate(db, MIGRATIONS.slice(0, 2));
    db.prepare(
      "INSERT INTO sessions (session_key, session_id, created_at, updated_at) VALUES ('k', 'sid', 0, 0)",
    ).run();
    db.prepare(
      "INSERT INTO messages (session_id, role, body, created_at) VALUES ('sid', 'user', '{}', 0)",
    ).run();
    expect(migrate(db, MIGRATIONS.slice(0, 3))).toEqual({ from: 2, to: 3 });
    expect(db.prepare("SELECT session_id FROM sessions").all()).toEqual([{ session_id: "sid" }]);
    expect(db.prepare("SELECT count(*) AS n FROM messages").get()).toEqual({ n: 1 });
    const code = db.prepare(
      "INSERT INTO pairing_codes (code, user, chat_id, created_at, expires_at) VALUES (?, ?, '1', 0, 1)",
    );
    code.run("AAAAAAAA", "telegram:1");
    expect(() => code.run("BBBBBBBB", "telegram:1")).toThrow(/UNIQUE/);
    expect(() => db.prepare("INSERT INTO pairing_guard VALUES (2, 0, 0)").run()).toThrow(/CHECK/);
  });

  it("adds the summaries table to a version 3 database, keeping its history", () => {
    migrate(db, MIGRATIONS.slice(0, 3));
    db.prepare(
      "INSERT INTO messages (session_id, role, body, created_at) VALUES ('sid', 'user', '{}', 0)",
    ).run();
    expect(migrate(db)).toEqual({ from: 3, to: MIGRATIONS.at(-1)!.version });
    expect(db.prepare("SELECT count(*) AS n FROM messages").get()).toEqual({ n: 1 });
    const insert = db.prepare(
      "INSERT INTO summaries (session_id, content, through_id, created_at) VALUES (?, 'notes', ?, 0)",
    );
    insert.run("sid", 1);
    expect(() => insert.run("sid", 1)).toThrow(/UNIQUE/);
    expect(() => insert.run("other", 0)).toThrow(/CHECK/);
  });

  it("adds the usage and session-model tables to a version 5 database, keeping its sessions", () => {
    migrate(db, MIGRATIONS.slice(0, 5));
    db.prepare(
      "INSERT INTO sessions (session_key, session_id, created_at, updated_at) VALUES ('k', 'sid', 0, 0)",
    ).run();
    expect(migrate(db)).toEqual({ from: 5, to: MIGRATIONS.at(-1)!.version });
    expect(db.prepare("SELECT session_id FROM sessions").all()).toEqual([{ session_id: "sid" }]);
    const usage = db.prepare(
      `INSERT INTO usage (at, day, session_key, session_id, user, model, input_tokens, output_tokens,
         cached_tokens, cost) VALUES (0, '1970-01-01', 'k', 'sid', NULL, 'main', ?, 1, 0, 0)`,
    );
    usage.run(5);
    expect(() => usage.run(-1)).toThrow(/CHECK/);
    db.prepare("INSERT INTO session_models VALUES ('k', 'main', 0)").run();
    expect(() => db.prepare("INSERT INTO session_models VALUES ('k', 'other', 0)").run()).toThrow(
      /UNIQUE|PRIMARY/,
    );
  });

  it("dates the attempt cap's row from version 10 on: one written before is dated 0", () => {
    migrate(db, MIGRATIONS.slice(0, 9));
    db.prepare(
      "INSERT INTO pairing_guard (id, failed_attempts, locked_until) VALUES (1, 2, 0)",
    ).run();
    expect(migrate(db, MIGRATIONS.slice(0, 10))).toEqual({ from: 9, to: 10 });
    expect(db.prepare("SELECT * FROM pairing_guard").all()).toEqual([
      { id: 1, failed_attempts: 2, locked_until: 0, updated_at: 0 },
    ]);
  });

  it("does nothing on a database that is already current", () => {
    migrate(db);
    const latest = MIGRATIONS.at(-1)!.version;
    expect(migrate(db)).toEqual({ from: latest, to: latest });
  });

  it("runs only the steps above the current version, in order", () => {
    const ran: number[] = [];
    const steps: Migration[] = [1, 2, 3].map((version) => ({
      version,
      up: () => {
        ran.push(version);
      },
    }));
    db.pragma("user_version = 1");
    expect(migrate(db, steps)).toEqual({ from: 1, to: 3 });
    expect(ran).toEqual([2, 3]);
  });

  it("leaves the version and schema of a failing step unchanged", () => {
    const latest = MIGRATIONS.at(-1)!.version;
    const steps: Migration[] = [
      ...MIGRATIONS,
      {
        version: latest + 1,
        up(inner) {
          inner.exec("CREATE TABLE extra (x INTEGER)");
          throw new Error("boom");
        },
      },
    ];
    expect(() => migrate(db, steps)).toThrow("boom");
    expect(schemaVersion(db)).toBe(latest);
    expect(tables()).not.toContain("extra");
  });

  it("refuses a database newer than the known steps", () => {
    db.pragma("user_version = 99");
    expect(() => migrate(db)).toThrow(StateSchemaError);
    expect(schemaVersion(db)).toBe(99);
  });

  it("renames session keys of the old format that read one way only, keeping their ids", () => {
    migrate(db, MIGRATIONS.slice(0, 1));
    const insert = db.prepare(
      "INSERT INTO sessions (session_key, session_id, created_at, updated_at) VALUES (?, ?, 0, 0)",
    );
    const old: [string, string][] = [
      ["agent:p:telegram:dm:42", "dm"],
      ["agent:p:telegram:dm:42:3", "dm-thread"],
      ["agent:p:telegram:group:-100", "shared-group"],
      ["agent:p:telegram:group:-100:7:42", "thread-user"],
      ["agent:p:telegram:channel:-200:5", "channel-thread"],
      ["agent:p:telegram:group:-100:222", "topic-or-member"],
    ];
    for (const [key, id] of old) insert.run(key, id);
    migrate(db);
    const rows = db
      .prepare<[], { session_key: string; session_id: string }>(
        "SELECT session_key, session_id FROM sessions ORDER BY session_id",
      )
      .all()
      .map((row) => [row.session_key, row.session_id]);
    expect(rows).toEqual(
      [
        ["agent:p:telegram:dm:42", "dm"],
        ["agent:p:telegram:dm:42:thread:3", "dm-thread"],
        ["agent:p:telegram:group:-100", "shared-group"],
        ["agent:p:telegram:group:-100:thread:7:user:42", "thread-user"],
        ["agent:p:telegram:channel:-200:thread:5", "channel-thread"],
        ["agent:p:telegram:group:-100:222", "topic-or-member"],
      ].sort((a, b) => a[1]!.localeCompare(b[1]!)),
    );
  });

  it("rejects rows with an unknown role or non-JSON body at the schema level", () => {
    migrate(db);
    const insert = db.prepare(
      "INSERT INTO messages (session_id, role, body, created_at) VALUES (?, ?, ?, 0)",
    );
    expect(() => insert.run("s", "robot", "{}")).toThrow(/CHECK/);
    expect(() => insert.run("s", "user", "not json")).toThrow(/CHECK/);
  });
});
