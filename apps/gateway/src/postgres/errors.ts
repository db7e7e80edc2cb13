import { MediagateError } from "@mediagate/io/mediagate-error";

/**
 * Where a PostgreSQL URL points, for messages and logs: `host:port/database`, never the user,
 * the password or the query string (which may carry them).
 */
export function postgresWhere(url: string): string {
  try {
    const parsed = new URL(url);
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, "")) || "postgres";
    const host = parsed.hostname || (parsed.searchParams.has("host") ? "socket" : "localhost");
    return `${host}:${parsed.port || "5432"}/${database}`;
  } catch {
    return "an unparsable URL";
  }
}

/** SQLSTATE `read_only_sql_transaction`: the server takes no writes (a standby, a demoted primary). */
export const ReadOnlyCode = "25006";

/**
 * SQLSTATE classes and codes that mean the server is not there (or went away), or takes no
 * writes for now: the call may succeed once the primary is back, not a bad query.
 */
const UnreachableCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
  // admin_shutdown, crash_shutdown, cannot_connect_now (starting up or shutting down)
  "57P01",
  "57P02",
  "57P03",
  // too_many_connections
  "53300",
  // read_only_sql_transaction: a standby, or a primary being failed over or demoted
  ReadOnlyCode,
]);

function codeOf(cause: unknown): string | undefined {
  if (typeof cause !== "object" || cause === null) return undefined;
  const code = (cause as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

/**
 * Whether `cause` (an error of node-postgres or of the pool) says the server could not be
 * reached or dropped the connection, or is read-only (a failover under way, or `store.url`
 * reaching a standby): the call may succeed once the primary is back. No answer within
 * `query_timeout` (`Query read timeout`: a network that drops packets rather than refusing
 * them, a server that froze) is one too: the statement may have been carried out unheard,
 * exactly as when the connection is lost after it was sent.
 */
export function isUnreachable(cause: unknown): boolean {
  const code = codeOf(cause);
  if (code !== undefined && (UnreachableCodes.has(code) || code.startsWith("08"))) return true;
  const message = messageOf(cause);
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connection timeout|Query read timeout/i.test(
    message,
  );
}

/**
 * A call on the PostgreSQL store failed. `code` tells a server that is not reachable (or went
 * away mid-call: retry once it is back) from any other failure (a constraint, a cancelled
 * query). The message names the server as `host:port/database`, never its credentials.
 */
export class PostgresStoreError extends MediagateError {
  override readonly name = "PostgresStoreError";
  readonly code: "MG_POSTGRES_UNREACHABLE" | "MG_POSTGRES_FAILED";
  /** What the store was doing: `connect`, `record`, `migrate`, … */
  readonly operation: string;
  /** `host:port/database` of the server. */
  readonly where: string;
  readonly unreachable: boolean;

  constructor(operation: string, where: string, cause: unknown) {
    const unreachable = isUnreachable(cause);
    super(
      codeOf(cause) === ReadOnlyCode
        ? `PostgreSQL ${where}: ${operation} failed: the server takes no writes (${messageOf(cause)}): ` +
            "a standby, or a primary being failed over; check that store.url points at the primary"
        : unreachable
          ? `PostgreSQL ${where}: ${operation} failed: the server is not reachable (${messageOf(cause)}); ` +
            "check that it runs and that store.url points at it"
          : `PostgreSQL ${where}: ${operation} failed: ${messageOf(cause)}`,
      { cause },
    );
    this.code = unreachable ? "MG_POSTGRES_UNREACHABLE" : "MG_POSTGRES_FAILED";
    this.operation = operation;
    this.where = where;
    this.unreachable = unreachable;
  }
}

/**
 * The database's schema (for one component: the journal, the state) is newer than this build
 * knows, typically after a downgrade. Nothing was changed.
 */
export class PostgresSchemaError extends MediagateError {
  override readonly name = "PostgresSchemaError";
  readonly code = "MG_POSTGRES_SCHEMA_NEWER";
  readonly component: string;
  readonly found: number;
  readonly supported: number;

  constructor(where: string, component: string, found: number, supported: number) {
    super(
      `PostgreSQL ${where}: the ${component} schema is at version ${found}, newer than this ` +
        `mediagate supports (${supported}); upgrade mediagate, or point store.url at another database`,
    );
    this.component = component;
    this.found = found;
    this.supported = supported;
  }
}

/**
 * The PostgreSQL store did not answer: a {@link PostgresStoreError} that says so anywhere down
 * the cause chain (the journal's and the state store's errors wrap it, and so may whatever
 * called the store: a turn's first command records its start through the tool runner).
 */
export function storeUnreachable(error: unknown): boolean {
  let cause = error;
  for (let depth = 0; cause instanceof Error && depth < 8; depth++) {
    if (cause instanceof PostgresStoreError) return cause.unreachable;
    cause = cause.cause;
  }
  return false;
}
