import { join } from "node:path";
import { readInContainer } from "./container-read.js";
import { findSlotContainers } from "./containers.js";
import { type ExecUser, OneShotUser, SessionHome } from "./exec-user.js";
import { inboxRecipient, saveInboxFiles } from "./inbox.js";
import { ArchiveInbox } from "./inbox-archive.js";
import { discard } from "./inbox-bytes.js";
import { HostInbox } from "./inbox-host.js";
import { execOnce } from "./one-shot-exec.js";
import { killFromOutside, killUidFromOutside, type OutsideKillContext } from "./outside-kill.js";
import type { SandboxContext } from "./sandbox-context.js";
import { sessionHash } from "./session-hash.js";
import { sessionIdentity } from "./session-identity.js";
import { SessionUmask } from "./shell-scripts.js";
import type { SlotLifecycle } from "./slot-lifecycle.js";
import { slotPaths } from "./slot-paths.js";
import type {
  ContainerFile,
  ContainerLink,
  ExecOptions,
  ExecResult,
  InboxFile,
  InboxKind,
  InboxOptions,
  InboxResult,
  SessionIdentity,
} from "./types.js";

/**
 * What goes in and out of a slot's container for its sessions: commands (`exec`, a
 * session's shell `run`), killing them (`killSession`, `killSlot`), files users send
 * (`saveToInbox`), and files read back for replies (`readFile`, `sessionIdentity`). Each
 * call runs on the container the slot lifecycle holds. The `Sandbox` methods of the same
 * names say what each does.
 */
export class SessionIo {
  readonly #ctx: SandboxContext;
  readonly #slots: SlotLifecycle;

  constructor(ctx: SandboxContext, slots: SlotLifecycle) {
    this.#ctx = ctx;
    this.#slots = slots;
  }

  async exec(
    slot: string,
    command: string | string[],
    opts: ExecOptions = {},
  ): Promise<ExecResult> {
    const ctx = this.#ctx;
    if (!ctx.users.perSession) {
      const argv = typeof command === "string" ? ["sh", "-c", command] : command;
      return this.#slots.withContainer("exec", slot, opts.signal, (id) =>
        execOnce(ctx.docker, id, argv, { ...opts, killOnStop: true }),
      );
    }
    // Same line, so the command's own line numbers in error messages stay as they were.
    const argv =
      typeof command === "string" ? ["sh", "-c", `umask ${SessionUmask}; ${command}`] : command;
    const env = { ...SessionHome, ...opts.env };
    return this.#slots.withContainer("exec", slot, opts.signal, (id) =>
      execOnce(ctx.docker, id, argv, {
        ...opts,
        env,
        killOnStop: true,
        user: OneShotUser,
        rescuer: ctx.users.housekeeper,
      }),
    );
  }

  async run(
    slot: string,
    sessionKey: string,
    command: string,
    opts: ExecOptions = {},
  ): Promise<ExecResult> {
    const shells = this.#ctx.shells;
    return shells.queue(slot, sessionKey, () =>
      this.#slots.withContainer("run", slot, opts.signal, async (containerId) => {
        await opts.beforeCommand?.();
        return shells.run(slot, sessionKey, containerId, command, opts);
      }),
    );
  }

  async saveToInbox<K extends InboxKind>(
    slot: string,
    files: readonly InboxFile[],
    opts: InboxOptions<K>,
  ): Promise<InboxResult<K>[]> {
    for (const file of files) {
      if (!Number.isSafeInteger(file.maxBytes) || file.maxBytes < 0) {
        for (const each of files) discard(each.source);
        throw new TypeError(
          `saveToInbox needs maxBytes to be a byte count (got ${file.maxBytes} for ${JSON.stringify(file.name)}): every file has a limit`,
        );
      }
    }
    try {
      return await this.#slots.withContainer("saveToInbox", slot, opts.signal, (containerId) =>
        this.#ctx.inboxSaves.run(slot, opts.signal, (signal) =>
          this.#saveToInbox(slot, containerId, files, opts, signal),
        ),
      );
    } catch (error) {
      for (const file of files) discard(file.source);
      throw error;
    }
  }

  async #saveToInbox<K extends InboxKind>(
    slot: string,
    containerId: string,
    files: readonly InboxFile[],
    opts: InboxOptions<K>,
    signal: AbortSignal,
  ): Promise<InboxResult<K>[]> {
    const ctx = this.#ctx;
    const recipient = await inboxRecipient(ctx.docker, containerId, ctx.users, opts.sessionKey);
    const slotDir = ctx.slotDirectory(slot);
    const workspace = join(slotDir, "workspace");
    const noSpace = (filename: string) => `${filename}: ${this.#noSpaceReason()}`;
    // The slot directory is the container's /workspace only when the engine runs here.
    const onHost =
      ctx.settings.filesystem === "bind" && ctx.options.engine.endpoint.startsWith("unix://");
    return saveInboxFiles({
      files,
      classify: opts.classify,
      signal,
      hostDir: onHost ? join(workspace, "inbox") : undefined,
      noSpace,
      open: onHost
        ? () => HostInbox.open(workspace, recipient.owner)
        : () =>
            ArchiveInbox.open({
              docker: ctx.docker,
              containerId,
              ...recipient,
              housekeeper: ctx.users.housekeeper,
              spoolDir: join(slotPaths(slotDir).sandboxesDir, "spool"),
              timeoutMs: ctx.bound.timeoutMs,
              signal,
              noSpace,
              noStagingSpace: (filename) =>
                `${filename}: no space left to stage it in /run/mediagate (its size is ${mib(ctx.settings.scratchBytes)}: sandbox.scratchBytes)`,
            }),
    });
  }

  /** Which ceiling a full `/workspace` hit, for a refused inbox file. */
  #noSpaceReason(): string {
    const { filesystem, tmpfsBytes, diskLimitBytes } = this.#ctx.settings;
    if (filesystem === "tmpfs")
      return `no space left in /workspace (its size is ${mib(tmpfsBytes)})`;
    if (diskLimitBytes > 0) {
      return `no space left in the slot (its disk ceiling is ${mib(diskLimitBytes)})`;
    }
    return "no space left on the host disk";
  }

  async killSession(sessionKey: string): Promise<number> {
    return this.#ctx.guard("killSession", "*", () =>
      this.#ctx.shells.kill(sessionKey, this.#slots.heldContainers(), (id, user) =>
        killUidFromOutside(this.#outside(), id, user),
      ),
    );
  }

  /** What a kill from a container beside the target needs. */
  #outside(): OutsideKillContext {
    const ctx = this.#ctx;
    return { docker: ctx.docker, owner: ctx.owner, bound: ctx.bound };
  }

  async killSlot(slot: string): Promise<number> {
    const ctx = this.#ctx;
    return ctx.guard("killSlot", slot, async () => {
      const ids = new Set<string>();
      const held = this.#slots.held(slot);
      if (held !== undefined) ids.add(held);
      const found = await findSlotContainers(ctx.docker, ctx.owner, slot, ctx.bound);
      for (const c of found) if (c.State === "running") ids.add(c.Id);
      let killed = 0;
      try {
        for (const id of ids) {
          killed += await killFromOutside(
            this.#outside(),
            id,
            ctx.shells.everySession(),
            ctx.users,
          );
        }
      } finally {
        ctx.shells.closeSlot(slot);
      }
      return killed;
    });
  }

  async readFile(
    slot: string,
    containerPath: string,
    maxBytes: number,
    opts: { sessionKey?: string | undefined } = {},
  ): Promise<ContainerFile | ContainerLink | undefined> {
    const ctx = this.#ctx;
    const current = await this.#slots.status(slot);
    if (current === undefined || current.state !== "running") return undefined;
    const { containerId } = current;
    return ctx.guard(
      "readFile",
      slot,
      async () => {
        let user: ExecUser | undefined;
        if (ctx.users.perSession) {
          user =
            opts.sessionKey === undefined
              ? OneShotUser
              : await ctx.sessionUsers.claim(containerId, sessionHash(opts.sessionKey));
        }
        const read = await readInContainer(ctx.docker, containerId, containerPath, maxBytes, {
          bound: ctx.bound,
          user,
          track: (work) => ctx.track(work),
        });
        if (read !== undefined || user === undefined) return read;
        // The session could not open it: where do its links lead? The caller's policy judges
        // that path (a link into a protected directory is withheld, not "not found"); nothing
        // is read as root.
        const real = await this.#realPath(containerId, containerPath);
        return real !== undefined && real !== containerPath ? { linkTarget: real } : undefined;
      },
      containerId,
    );
  }

  async sessionIdentity(slot: string, sessionKey: string): Promise<SessionIdentity> {
    const ctx = this.#ctx;
    const current = await this.#slots.status(slot);
    const containerId = current?.state === "running" ? current.containerId : undefined;
    return ctx.guard(
      "sessionIdentity",
      slot,
      () =>
        sessionIdentity(ctx.docker, containerId, {
          mode: ctx.users,
          users: ctx.sessionUsers,
          sessionKey,
          timeoutMs: ctx.bound.timeoutMs,
        }),
      containerId,
    );
  }

  /** `readlink -f` of a container path as root (links resolved, nothing opened), if it has one. */
  async #realPath(containerId: string, path: string): Promise<string | undefined> {
    const ctx = this.#ctx;
    const result = await execOnce(ctx.docker, containerId, ["readlink", "-f", "--", path], {
      timeoutMs: ctx.bound.timeoutMs,
      killOnStop: false,
      user: ctx.users.housekeeper,
    });
    const real = result.stdout.replace(/\n$/, "");
    return result.exitCode === 0 && real.startsWith("/") ? real : undefined;
  }
}

/** `bytes` in MiB for messages (`16 MiB`, `0.5 MiB`). */
function mib(bytes: number): string {
  return `${Number((bytes / 1_048_576).toFixed(1))} MiB`;
}
