import { join } from "node:path";
import { settledWithin } from "@mediagate/io";
import type Docker from "dockerode";
import { Defaults } from "./defaults.js";
import { codeOf, messageOf } from "./docker-errors.js";
import type { ExecUser, UserMode } from "./exec-user.js";
import { aborted, discard, InboxFileError, InboxMeter, tooLarge } from "./inbox-bytes.js";
import type { InboxOwner } from "./inbox-host.js";
import { inboxFileName } from "./inbox-name.js";
import { execOnce } from "./one-shot-exec.js";
import { sessionHash } from "./session-hash.js";
import { sessionUser } from "./session-user.js";
import type {
  InboxClassifier,
  InboxFile,
  InboxKind,
  InboxRefused,
  InboxResult,
  InboxSaved,
} from "./types.js";

/** Where one call's files are written: the host through the slot dir, or the engine. */
export interface InboxWriter {
  /** Streams `chunks` into the inbox under the first free numbered `name`; answers that name. */
  write(
    chunks: AsyncIterable<Buffer>,
    name: string,
    beforeLink: () => Promise<void>,
  ): Promise<string>;
  close(): Promise<void>;
}

/** One call of `Sandbox#saveToInbox`, once the container and the receiving user are known. */
export interface SaveRequest<K extends InboxKind> {
  readonly files: readonly InboxFile[];
  readonly classify: InboxClassifier<K>;
  readonly signal: AbortSignal;
  /** Opens the writer once for the call; an {@link InboxFileError} refuses every file with it. */
  readonly open: () => Promise<InboxWriter>;
  /** `workspace/inbox` on the host when the files land there (bind slot, local engine). */
  readonly hostDir: string | undefined;
  /** The sentence for a full disk, naming which ceiling was hit. */
  readonly noSpace: (filename: string) => string;
}

/**
 * Saves the files one after the other, each streamed through an {@link InboxMeter} into the
 * writer; a file that fails (over its limit, its source failed, no space, aborted) is
 * refused with the reason and leaves nothing, and the next file is still saved. Errors of
 * the writer's opening other than {@link InboxFileError} propagate (the container went away:
 * the caller may retry, no source has been read).
 */
export async function saveInboxFiles<K extends InboxKind>(
  request: SaveRequest<K>,
): Promise<InboxResult<K>[]> {
  let writer: InboxWriter | undefined;
  let unusable: InboxFileError | undefined;
  try {
    writer = await request.open();
  } catch (error) {
    if (!(error instanceof InboxFileError)) throw error;
    unusable = error;
  }
  try {
    const results: InboxResult<K>[] = [];
    for (const file of request.files) {
      results.push(await saveOne(request, file, writer, unusable));
    }
    return results;
  } finally {
    await writer?.close();
  }
}

async function saveOne<K extends InboxKind>(
  request: SaveRequest<K>,
  file: InboxFile,
  writer: InboxWriter | undefined,
  unusable: InboxFileError | undefined,
): Promise<InboxResult<K>> {
  const filename = inboxFileName(file.name);
  const { signal } = request;
  const refuse = (error: unknown): InboxRefused => {
    discard(file.source);
    return refusal(file.name, filename, error, signal, request.noSpace);
  };
  if (signal.aborted) return refuse(aborted(filename));
  if (writer === undefined) return refuse(unusable);
  if (file.declaredBytes !== undefined && file.declaredBytes > file.maxBytes) {
    return refuse(tooLarge(filename, file.maxBytes));
  }
  const meter = new InboxMeter(filename, file.maxBytes);
  let kind: K | undefined;
  let sha256 = "";
  try {
    const saved = await writer.write(meter.pass(file.source, signal), filename, async () => {
      sha256 = meter.digest();
      kind = await request.classify(meter.head, filename);
    });
    if (kind === undefined) throw new Error("the classifier gave no answer");
    const result: InboxSaved<K> = {
      status: "saved",
      name: file.name,
      filename: saved,
      containerPath: `${Defaults.inboxDir}/${saved}`,
      hostPath: request.hostDir === undefined ? undefined : join(request.hostDir, saved),
      kind: kind.kind,
      mime: kind.mime,
      size: meter.size,
      sha256,
    };
    return result;
  } catch (error) {
    return refuse(error);
  }
}

function refusal(
  name: string,
  filename: string,
  error: unknown,
  signal: AbortSignal,
  noSpace: (filename: string) => string,
): InboxRefused {
  const refused = (reason: InboxRefused["reason"], message: string): InboxRefused => ({
    status: "refused",
    name,
    reason,
    message,
  });
  if (error instanceof InboxFileError) return refused(error.reason, error.message);
  if (signal.aborted) return refused("aborted", aborted(filename).message);
  const code = codeOf(error);
  if (code === "ENOSPC" || code === "EDQUOT") return refused("no_space", noSpace(filename));
  return refused("failed", `${filename}: ${messageOf(error)}`);
}

/** Who receives inbox files in a container, and who runs the engine-side copy. */
export interface InboxRecipient {
  readonly owner: InboxOwner;
  /** The exec user of the copy (archive path); `undefined` is the image's user (root mode). */
  readonly user: ExecUser | undefined;
}

/**
 * The user the session's commands run as, as the owner of its inbox files: in per-session
 * mode the session's uid (claimed like its shell would), group `Defaults.sandboxGid`, files
 * `0664` and a new inbox `2770` — what the session's own commands make under umask 002 in
 * the setgid workspace; in root mode the image's user (`id -u`, `id -g`), `0644` and `0755`.
 */
export async function inboxRecipient(
  docker: Docker,
  containerId: string,
  mode: UserMode,
  sessionKey: string,
): Promise<InboxRecipient> {
  if (mode.perSession) {
    const user = await sessionUser(docker, containerId, sessionHash(sessionKey), true);
    if (user === undefined) throw new Error("the session's user could not be claimed");
    return { owner: { ...user, fileMode: 0o664, dirMode: 0o2770 }, user };
  }
  const ids = await execOnce(docker, containerId, ["sh", "-c", "id -u && id -g"], {
    timeoutMs: Defaults.operationTimeoutMs,
    killOnStop: false,
  });
  const [uid, gid] = ids.stdout.trim().split(/\s+/).map(Number);
  if (ids.exitCode !== 0 || !Number.isSafeInteger(uid) || !Number.isSafeInteger(gid)) {
    throw new Error(`cannot tell the image's user (id: ${ids.stderr.trim() || ids.exitCode})`);
  }
  return {
    owner: { uid: uid ?? 0, gid: gid ?? 0, fileMode: 0o644, dirMode: 0o755 },
    user: undefined,
  };
}

/**
 * The inbox saves running in this process, per slot, so a cleanup that removes the slot's
 * container and files (`/reset`) stops them first: a host write holds the inbox open, which
 * keeps the slot's disk image from being unmounted.
 */
export class InboxSaves {
  readonly #running = new Map<string, Set<{ stop: AbortController; done: Promise<unknown> }>>();

  /** Runs `fn` with a signal that aborts on `signal` or on {@link stop} of `slot`. */
  async run<T>(
    slot: string,
    signal: AbortSignal | undefined,
    fn: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const stop = new AbortController();
    const combined = signal === undefined ? stop.signal : AbortSignal.any([signal, stop.signal]);
    const done = fn(combined);
    const entry = { stop, done };
    const set = this.#running.get(slot) ?? new Set();
    this.#running.set(slot, set);
    set.add(entry);
    try {
      return await done;
    } finally {
      set.delete(entry);
      if (set.size === 0 && this.#running.get(slot) === set) this.#running.delete(slot);
    }
  }

  /** Aborts the slot's saves and waits (at most `waitMs`) until they have let go. */
  async stop(slot: string, waitMs: number): Promise<void> {
    const set = this.#running.get(slot);
    if (set === undefined) return;
    for (const entry of set) entry.stop.abort();
    const settled = Promise.allSettled([...set].map((entry) => entry.done));
    await settledWithin(settled, waitMs);
  }
}
