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
    expect(tables()).toEqual(["messages", "sessions"]);
  });

  it("does nothing on a database that is already current", () => {
    migrate(db);
    expect(migrate(db)).toEqual({ from: 1, to: 1 });
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
    const steps: Migration[] = [
      ...MIGRATIONS,
      {
        version: 2,
        up(inner) {
          inner.exec("CREATE TABLE extra (x INTEGER)");
          throw new Error("boom");
        },
      },
    ];
    expect(() => migrate(db, steps)).toThrow("boom");
    expect(schemaVersion(db)).toBe(1);
    expect(tables()).toEqual(["messages", "sessions"]);
  });

  it("refuses a database newer than the known steps", () => {
    db.pragma("user_version = 5");
    expect(() => migrate(db)).toThrow(StateSchemaError);
    expect(schemaVersion(db)).toBe(5);
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
