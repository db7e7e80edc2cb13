import { describe, expect, it } from "vitest";
import { Redacted, Redactor } from "../redact.js";
import { emptyEnv, type GatewayEnv } from "./env.js";
import { ConfigError } from "./errors.js";
import { resolveConfig } from "./load.js";

const env: GatewayEnv = emptyEnv("/home/u");
const withVariables = (variables: Record<string, string>): GatewayEnv => ({ ...env, variables });

describe("store: in the config", () => {
  it("is SQLite in the homes when the file says nothing", () => {
    expect(resolveConfig({}, { env }).store).toEqual({ kind: "sqlite" });
    expect(resolveConfig({ store: { kind: "sqlite" } }, { env }).store).toEqual({
      kind: "sqlite",
    });
  });

  it("takes a PostgreSQL URL from the environment and teaches the redactor all of it", () => {
    const url = "postgres://mediagate:pw-from-env@db.internal:5432/mediagate";
    const redactor = new Redactor();
    const config = resolveConfig(
      { store: { kind: "postgres", url: "${DATABASE_URL}", maxConnections: 4 } },
      { env: withVariables({ DATABASE_URL: url }), redactor },
    );
    expect(config.store).toEqual({ kind: "postgres", url, maxConnections: 4 });
    expect(redactor.text(`could not reach ${url}`)).toBe(`could not reach ${Redacted}`);
    expect(redactor.text("password pw-from-env")).toBe(`password ${Redacted}`);
    // The role's name is not a secret: a role called after the program must not mangle lines.
    expect(redactor.text("mediagate store migrate")).toBe("mediagate store migrate");
  });

  it("refuses a URL that is not PostgreSQL's without printing it, and unknown keys", () => {
    const refuse = (store: unknown): string => {
      try {
        resolveConfig({ store }, { env, source: "/etc/m.yaml" });
      } catch (error) {
        if (error instanceof ConfigError) return error.message;
        throw error;
      }
      throw new Error("expected a ConfigError");
    };
    const wrong = refuse({ kind: "postgres", url: "mysql://u:hunter22@h/db" });
    expect(wrong).toMatch(/store\.url/);
    expect(wrong).toMatch(/postgres:\/\/user:password@host:5432\/database/);
    expect(wrong).not.toMatch(/hunter22/);
    expect(refuse({ kind: "postgres" })).toMatch(/store\.url/);
    expect(refuse({ kind: "mysql" })).toMatch(/one of "sqlite", "postgres"/);
    expect(refuse({ kind: "postgres", url: "postgres://h/db", poolSize: 3 })).toMatch(/poolSize/);
  });
});

describe("cluster: in the config", () => {
  it("takes an absolute slots directory and refuses a relative one, saying what to give", () => {
    expect(resolveConfig({ cluster: { slotsDir: "/mnt/slots" } }, { env }).cluster).toEqual({
      slotsDir: "/mnt/slots",
    });
    expect(resolveConfig({}, { env }).cluster).toEqual({});
    expect(() => resolveConfig({ cluster: { slotsDir: "slots" } }, { env })).toThrow(
      /cluster\.slotsDir[\s\S]*absolute path every replica sees/,
    );
  });
});
