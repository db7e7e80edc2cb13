import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { StatementCache } from "./statement-cache.js";

describe("StatementCache", () => {
  const db = new Database(":memory:");
  afterEach(() => db.exec("DROP TABLE IF EXISTS t"));

  it("compiles each SQL text once and hands the same statement again", () => {
    let compiled = 0;
    const cache = new StatementCache((sql) => {
      compiled++;
      return db.prepare(sql);
    });
    db.exec("CREATE TABLE t (v INTEGER)");
    for (let i = 0; i < 3; i++) cache.get("INSERT INTO t (v) VALUES (?)").run(i);
    const first = cache.get("SELECT sum(v) AS s FROM t");
    expect(cache.get("SELECT sum(v) AS s FROM t")).toBe(first);
    expect(first.get()).toEqual({ s: 3 });
    expect(compiled).toBe(2);
  });

  it("keeps at most its size, dropping the statement used least recently", () => {
    const compiledSql: string[] = [];
    const cache = new StatementCache((sql) => {
      compiledSql.push(sql);
      return db.prepare(sql);
    }, 2);
    cache.get("SELECT 1");
    cache.get("SELECT 2");
    cache.get("SELECT 1"); // now the most recently used
    cache.get("SELECT 3"); // drops SELECT 2
    expect(cache.size).toBe(2);
    cache.get("SELECT 1");
    cache.get("SELECT 2");
    expect(compiledSql).toEqual(["SELECT 1", "SELECT 2", "SELECT 3", "SELECT 2"]);
  });
});
