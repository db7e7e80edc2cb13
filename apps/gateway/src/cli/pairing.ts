import { MediagateError } from "@mediagate/io";
import type { GatewayEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { printable } from "../printable.js";
import type { Redactor } from "../redact.js";
import { formatPairingCode, normalizePairingCode, pairedUserName } from "../state/pairing.js";
import type { StateStore } from "../state/state-store.js";
import { type StoredProfile, withProfileState } from "./profile-state.js";

type Print = (line: string) => void;

/** Options shared by the `mediagate pairing` subcommands. */
export interface PairingCommandOptions {
  readonly config?: string | undefined;
  readonly profile?: string | undefined;
  readonly env: GatewayEnv;
  /** Learns the config's secrets, so the CLI can scrub what it prints. */
  readonly redactor?: Redactor | undefined;
  /** The clock codes expire by. Default `Date.now`; tests move it. */
  readonly now?: (() => number) | undefined;
}

/** `mediagate pairing` could not do what it was asked (exit 1, this message). */
export class PairingCommandError extends MediagateError {
  override readonly name = "PairingCommandError";
  readonly code = "MG_CLI_PAIRING_FAILED";
}

/** The columns of `pairing list`, printed as its first line. */
export const PairingListHeader = ["PROFILE", "STATE", "USER", "NAME", "CODE", "BY", "TIME"].join(
  "\t",
);

const UserIdPattern = /^(telegram|discord|console):[^:\s]+$/;

/** The profiles the command acts on; an unknown `-p` is an error naming the known ones. */
async function profilesOf(options: PairingCommandOptions): Promise<readonly StoredProfile[]> {
  const config = await loadConfig({
    path: options.config,
    env: options.env,
    redactor: options.redactor,
  });
  const only = options.profile;
  const known = config.profiles.map((p) => p.name);
  if (only !== undefined && !known.includes(only)) {
    throw new PairingCommandError(
      `unknown profile "${only}": the config has ${known.map((n) => `"${n}"`).join(", ")} (use -p with one of them, or leave it out for all)`,
    );
  }
  return config.profiles
    .filter((p) => only === undefined || p.name === only)
    .map((p) => ({ ...p, store: config.store }));
}

/**
 * Runs `body` on the profile's state store beside a gateway that may be running: a few rows
 * read or written, not worth a read of the whole file (see `integrityCheck`).
 */
function withStore<T>(
  profile: StoredProfile,
  options: PairingCommandOptions,
  body: (store: StateStore) => Promise<T>,
): Promise<T | undefined> {
  return withProfileState(profile, { integrityCheck: false, now: options.now }, body);
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * `mediagate pairing list`: each profile's pending codes (not expired) and approved users, a
 * header row then one tab-separated line each ({@link PairingListHeader}, every cell through
 * {@link printable}), and a note for a profile whose `/approve` is locked or that does not
 * pair (`access: allowlist`).
 */
export async function pairingList(options: PairingCommandOptions, print: Print): Promise<number> {
  let rows = 0;
  // Every cell is escaped: names (and ids) are what the platform accounts sent, and a tab,
  // a newline or a terminal escape in one would forge or hide rows.
  const row = (cells: readonly string[]) => {
    if (rows++ === 0) print(PairingListHeader);
    print(cells.map((cell) => printable(cell)).join("\t"));
  };
  const notes: string[] = [];
  for (const profile of await profilesOf(options)) {
    const list = await withStore(profile, options, (store) => store.listPairing());
    for (const p of list?.pending ?? []) {
      row([
        profile.name,
        "pending",
        p.user,
        p.userName ?? "-",
        formatPairingCode(p.code),
        "-",
        `expires ${iso(p.expiresAtMs)}`,
      ]);
    }
    for (const a of list?.approved ?? []) {
      row([
        profile.name,
        "approved",
        a.user,
        a.userName ?? "-",
        "-",
        a.approvedBy,
        `approved ${iso(a.approvedAtMs)}`,
      ]);
    }
    if (list?.lockedUntilMs !== undefined) {
      notes.push(
        `profile ${profile.name}: /approve is locked until ${iso(list.lockedUntilMs)} after too many wrong codes (\`mediagate pairing approve\` still works)`,
      );
    }
    if (profile.access !== "pairing") {
      notes.push(
        `profile ${profile.name}: access is allowlist: no codes are offered${(list?.approved.length ?? 0) > 0 ? " and the approved users above are not let in" : ""} (set access: pairing to pair users)`,
      );
    }
  }
  if (rows === 0) print("no pending codes and no approved users");
  for (const note of notes) print(note);
  return 0;
}

/**
 * `mediagate pairing approve CODE`: approves the user of the pending code in whichever
 * profile (with `access: pairing`) holds it. Not held to the chat's attempt cap, nor stopped
 * by its lock: whoever runs it can read the state database anyway.
 */
export async function pairingApprove(
  typed: string,
  options: PairingCommandOptions,
  print: Print,
): Promise<number> {
  const code = normalizePairingCode(typed);
  if (code === undefined) {
    throw new PairingCommandError(
      `"${typed}" is not a pairing code: 8 letters and digits, like ABCD-EFGH (see \`mediagate pairing list\`)`,
    );
  }
  const profiles = (await profilesOf(options)).filter((p) => p.access === "pairing");
  if (profiles.length === 0) {
    throw new PairingCommandError(
      `no profile${options.profile === undefined ? "" : ` "${options.profile}"`} has access: pairing; set it in the config to pair users`,
    );
  }
  for (const profile of profiles) {
    const result = await withStore(profile, options, (store) => store.approvePairing(code, "cli"));
    if (result?.status === "used") {
      const who = printable(pairedUserName(result));
      print(
        `code ${formatPairingCode(code)} was used already: ${who} was approved in profile ${profile.name} by ${printable(result.approvedBy)} at ${iso(result.approvedAtMs)}, and still is; nothing was done`,
      );
      return 0;
    }
    if (result?.status !== "approved") continue;
    const who = printable(pairedUserName(result));
    print(`approved ${who} in profile ${profile.name}: they may use the bot now (not as an admin)`);
    return 0;
  }
  throw new PairingCommandError(
    `no pending code ${formatPairingCode(code)} in profile ${profiles.map((p) => p.name).join(", ")} (mistyped, already used, revoked or expired; see \`mediagate pairing list\`)`,
  );
}

/**
 * `mediagate pairing revoke <user|code>`: by user (`telegram:123`), removes their approval and
 * any pending code of theirs; by code, that pending code. In every profile, or `-p`'s. A user
 * in the config's `allowedUsers` or `admins` stays allowed: revoke undoes pairing only.
 */
export async function pairingRevoke(
  target: string,
  options: PairingCommandOptions,
  print: Print,
): Promise<number> {
  const trimmed = target.trim();
  const code = UserIdPattern.test(trimmed) ? undefined : normalizePairingCode(trimmed);
  if (!UserIdPattern.test(trimmed) && code === undefined) {
    throw new PairingCommandError(
      `"${target}" is neither a user id ("<platform>:<id>", e.g. telegram:123456) nor a pairing code (like ABCD-EFGH)`,
    );
  }
  const what = code === undefined ? { user: trimmed } : { code };
  let removed = 0;
  for (const profile of await profilesOf(options)) {
    const result = await withStore(profile, options, (store) => store.revokePairing(what));
    if (result === undefined || result.approved + result.pending === 0) continue;
    removed += result.approved + result.pending;
    const parts = [
      ...(result.approved > 0 ? ["the approval"] : []),
      ...(result.pending > 0 ? ["the pending code"] : []),
    ];
    print(
      `profile ${profile.name}: revoked ${parts.join(" and ")} of ${code === undefined ? trimmed : formatPairingCode(code)}`,
    );
    if (code === undefined && [...profile.allowedUsers, ...profile.admins].includes(trimmed)) {
      print(
        `profile ${profile.name}: ${trimmed} is still allowed by the config (allowedUsers or admins)`,
      );
    }
  }
  if (removed === 0) {
    throw new PairingCommandError(`nothing to revoke: no approval or pending code of ${trimmed}`);
  }
  return 0;
}
