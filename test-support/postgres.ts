import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

/**
 * The private PostgreSQL cluster of the test run (scripts/lib/postgres.sh starts it for
 * scripts/test.sh and scripts/test-long.sh): its URL, with the database `postgres`. A test that
 * needs PostgreSQL fails with this line when the cluster is not there, never skips.
 */
export function testPostgresUrl(): string {
  const url = process.env.MEDIAGATE_TEST_POSTGRES_URL?.trim();
  if (url === undefined || url === "") {
    throw new Error(
      "MEDIAGATE_TEST_POSTGRES_URL is not set: these tests need the private PostgreSQL cluster " +
        "that scripts/test.sh starts (run the suite with it, or start one with " +
        "`. scripts/lib/postgres.sh && pg_cluster_start` and export the URL it prints)",
    );
  }
  return url;
}

/** A database of its own for one test (file): created empty, dropped by `drop`. */
export interface TestDatabase {
  /** Its connection URL. */
  readonly url: string;
  readonly name: string;
  /** Drops it, closing whatever connections are still open to it. */
  drop(): Promise<void>;
}

/**
 * Creates an empty database named after `label` and a random suffix: on the test cluster, or
 * on the cluster whose `postgres` database `adminUrl` points at (a {@link startPrivatePostgres}).
 */
export async function freshPostgresDatabase(
  label = "t",
  adminUrl: string = testPostgresUrl(),
): Promise<TestDatabase> {
  const admin = adminUrl;
  const name = `mg_${label
    .replace(/[^a-z0-9_]/gi, "_")
    .toLowerCase()
    .slice(0, 30)}_${randomBytes(5).toString("hex")}`;
  await withAdmin(admin, (client) => client.query(`CREATE DATABASE "${name}"`));
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () =>
      withAdmin(admin, (client) =>
        client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
      ).then(() => undefined),
  };
}

async function withAdmin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Where a cluster lives and who runs it: what `pg_ctl` needs. */
export interface PostgresCluster {
  /** The directory of `pg_ctl` and `initdb`. */
  readonly bin: string;
  /** The data directory. */
  readonly data: string;
  /** The account that owns and runs it (PostgreSQL refuses root). */
  readonly owner: string;
}

/**
 * Runs `pg_ctl <action>` on the test cluster, as its owner (PostgreSQL refuses root), and waits
 * for it: `restart -m fast` and `stop -m fast` for outage tests, `start` to bring it back.
 * Every test file that stops the server must start it again before it ends; the cluster is
 * shared by the files running in parallel, so such tests belong to files that run alone
 * (the long suite) or tolerate the others' outages. A test of its own takes `cluster` from
 * {@link startPrivatePostgres} instead, and stops nobody else's server.
 */
export function controlPostgres(
  action: "start" | "stop" | "restart",
  mode: "fast" | "immediate" = "fast",
  cluster: PostgresCluster = {
    bin: requiredEnv("MEDIAGATE_TEST_POSTGRES_BIN"),
    data: requiredEnv("MEDIAGATE_TEST_POSTGRES_DATA"),
    owner: requiredEnv("MEDIAGATE_TEST_POSTGRES_OWNER"),
  },
): void {
  const args = [`${cluster.bin}/pg_ctl`, "-D", cluster.data, "-w"];
  if (action !== "start") args.push("-m", mode);
  if (action !== "stop") args.push("-l", `${cluster.data}/../server.log`);
  args.push(action);
  const asOwner = process.getuid?.() === 0 ? ["runuser", "-u", cluster.owner, "--", ...args] : args;
  const [command, ...rest] = asOwner as [string, ...string[]];
  const result = spawnSync(command, rest, { encoding: "utf8" });
  if (result.status !== 0) {
    throw new Error(
      `pg_ctl ${action} failed (${result.status}): ${result.stderr || result.stdout}`,
    );
  }
}

/** A cluster of one test's own (see {@link startPrivatePostgres}). */
export interface PrivatePostgres extends PostgresCluster {
  /** Its URL, with the database `postgres`. */
  readonly url: string;
  /** Stops it for good and deletes its directory; safe to call twice. */
  remove(): void;
}

/**
 * Starts a PostgreSQL cluster of the calling test's own (scripts/lib/postgres.sh's
 * `pg_cluster_start`: initdb on a new /tmp/mediagate-pg.* directory, loopback only), for tests
 * that stop or restart the server: the run's shared cluster is never stopped. Takes a few
 * seconds; `remove` it in `afterAll`.
 */
export function startPrivatePostgres(): PrivatePostgres {
  const script = fileURLToPath(new URL("../scripts/lib/postgres.sh", import.meta.url));
  const result = spawnSync(
    "bash",
    [
      "-c",
      `. "${script}" && pg_cluster_start >&2 && printf '%s\\n' "$MEDIAGATE_TEST_POSTGRES_URL" "$MEDIAGATE_TEST_POSTGRES_DATA" "$MEDIAGATE_TEST_POSTGRES_BIN" "$MEDIAGATE_TEST_POSTGRES_OWNER"`,
    ],
    { encoding: "utf8" },
  );
  const [url, data, bin, owner] = result.stdout.trim().split("\n");
  if (
    result.status !== 0 ||
    url === undefined ||
    data === undefined ||
    bin === undefined ||
    owner === undefined
  ) {
    throw new Error(`could not start a private PostgreSQL cluster: ${result.stderr}`);
  }
  const cluster = { url, data, bin, owner };
  let removed = false;
  return {
    ...cluster,
    remove: () => {
      if (removed) return;
      removed = true;
      try {
        controlPostgres("stop", "immediate", cluster);
      } catch {
        // Already stopped.
      }
      rmSync(dirname(data), { recursive: true, force: true });
    },
  };
}

function requiredEnv(name: string): string {
  const value = process.env[name]?.trim();
  if (value === undefined || value === "") {
    throw new Error(
      `${name} is not set: start the test cluster with scripts/lib/postgres.sh (see testPostgresUrl)`,
    );
  }
  return value;
}
