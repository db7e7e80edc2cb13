import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Transactions, transactionsOf } from "./transactions.js";

describe("transactionsOf", () => {
  let dir: string;
  let db: Database.Database;
  let other: Database.Database;
  let transactions: Transactions;
  const values = () => db.prepare("SELECT v FROM t ORDER BY v").pluck().all();

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "mg-transactions-"));
    db = new Database(join(dir, "t.db"));
    db.pragma("journal_mode = WAL");
    db.exec("CREATE TABLE t (v INTEGER)");
    other = new Database(join(dir, "t.db"), { timeout: 0 });
    transactions = transactionsOf(db);
  });

  afterEach(() => {
    other.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("commits what the function wrote and hands back what it returned", () => {
    const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
    expect(transactions.immediate(() => insert.run(1).changes)).toBe(1);
    expect(transactions.deferred(() => insert.run(2).changes)).toBe(1);
    expect(values()).toEqual([1, 2]);
    expect(db.inTransaction).toBe(false);
  });

  it("rolls back everything the function wrote when it throws", () => {
    expect(() =>
      transactions.immediate(() => {
        db.prepare("INSERT INTO t (v) VALUES (1)").run();
        throw new Error("no");
      }),
    ).toThrow("no");
    expect(values()).toEqual([]);
  });

  it("runs a savepoint inside an open transaction: a failing inner call keeps the outer writes", () => {
    transactions.immediate(() => {
      db.prepare("INSERT INTO t (v) VALUES (1)").run();
      expect(() =>
        transactions.deferred(() => {
          db.prepare("INSERT INTO t (v) VALUES (2)").run();
          throw new Error("inner");
        }),
      ).toThrow("inner");
      transactions.deferred(() => db.prepare("INSERT INTO t (v) VALUES (3)").run());
    });
    expect(values()).toEqual([1, 3]);
  });

  it("takes the write lock at once with immediate, at the first write with deferred", () => {
    const writeFromOther = () => other.prepare("INSERT INTO t (v) VALUES (9)").run();
    expect(() => transactions.immediate(() => writeFromOther())).toThrow(/locked/);
    transactions.deferred(() => {
      db.prepare("SELECT count(*) FROM t").get();
      writeFromOther();
    });
    expect(values()).toEqual([9]);
  });
});
