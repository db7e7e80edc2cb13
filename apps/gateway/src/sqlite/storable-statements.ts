import type Database from "better-sqlite3";
import { storableParams } from "../postgres/stored-text.js";
import { StatementCache } from "./statement-cache.js";

/** The statement methods that take parameters. */
const Binding = new Set<PropertyKey>(["run", "get", "all", "iterate", "bind"]);

/**
 * `db` whose prepared statements write strings as the PostgreSQL store does: with each NUL
 * replaced ({@link storableParams}), so both stores hold the same text (docs/store.md).
 * Each SQL text is compiled once ({@link StatementCache}): a statement must not be switched to
 * another mode (`pluck()`, `raw()`, …). Everything else is `db`'s own, called on `db` itself
 * (better-sqlite3's methods refuse any other `this`).
 */
export function storableStatements(db: Database.Database): Database.Database {
  const statements = new StatementCache((sql) => storableStatement(db.prepare(sql)));
  const prepare = (sql: string) => statements.get(sql);
  return new Proxy(db, {
    get(target, property) {
      if (property === "prepare") return prepare;
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== "function") return value;
      return value.bind(target);
    },
  });
}

function storableStatement(statement: Database.Statement): Database.Statement {
  const proxy: Database.Statement = new Proxy(statement, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const result = Reflect.apply(
          value,
          target,
          Binding.has(property) ? storableParams(args) : args,
        ) as unknown;
        // `pluck()`, `raw()`, `bind()`, … return the statement itself: keep handing the proxy.
        return result === target ? proxy : result;
      };
    },
  });
  return proxy;
}
