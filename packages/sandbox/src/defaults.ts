import type { SandboxSettings } from "./types.js";

/**
 * Every tunable of @mediagate/sandbox in one place. Settings that belong to a profile's
 * configuration live under `settings` (the gateway validates and merges them; tests and
 * the bench spread them); the rest are operational bounds of this package.
 */
export const Defaults = {
  /** Default Docker endpoint when no `DOCKER_HOST` is configured. */
  dockerHost: "unix:///var/run/docker.sock",
  settings: {
    persistent: true,
    filesystem: "bind" as "bind" | "tmpfs",
    persistAcrossProcesses: true,
    orphanReaper: true,
    lifetimeSeconds: 300,
    network: "none",
    /** Memory ceiling of a container (tmpfs pages count against it too). 1 GiB. */
    memoryBytes: 1024 * 1024 * 1024,
    pidsLimit: 512,
    /** Size of each tmpfs mount (`/workspace` and `/root` with a tmpfs filesystem). 512 MiB. */
    tmpfsBytes: 512 * 1024 * 1024,
    /**
     * Size of each of `/tmp`, `/var/tmp` and `/run/mediagate` (tmpfs: the root filesystem is
     * read-only). 256 MiB: above the largest file a user can send by default (the console's
     * 100 MiB), which passes through `/run/mediagate` on the archive path.
     */
    scratchBytes: 256 * 1024 * 1024,
    /** Per-slot disk ceiling of a bind filesystem (a loop-mounted ext4 image). 4 GiB; 0 = none. */
    diskLimitBytes: 4 * 1024 * 1024 * 1024,
    volumes: [] as readonly string[],
    sharedKey: "",
    user: "per-session" as "per-session" | "root",
    sessionProcessLimit: 128,
    /**
     * Ready containers kept per profile for new per-session slots (`persistent: false`): a new
     * session claims one, with its uid and shell made ahead, instead of creating its own
     * (`warm-pool.ts`): its first reply falls from about 300 ms to 20-30 ms (bench/README.md,
     * "Issue 31, target 1"). One is enough for one new user at a time; 0 turns the pool off.
     */
    warmPool: 1,
    // maxOpenShells is left out: it is derived from pidsLimit and memoryBytes
    // (`maxOpenShellsOf`, `openShellsPidsShare`, `openShellMemoryBytes`).
  },
  /**
   * Share of a container's `pidsLimit` its session shells may hold when `maxOpenShells` is not
   * set: each open shell is one process (an idle busybox `sh`); the rest stays for the commands
   * and whatever they leave running. Chosen so that the default limits hold 300 sessions' shells
   * (`pnpm bench:e2e`, bench/README.md).
   */
  openShellsPidsShare: 5 / 8,
  /**
   * Container memory each open shell is budgeted at when `maxOpenShells` is not set, so a
   * container with little memory holds fewer shells. An idle busybox `sh` charged its container
   * about 160 KB (kernel memory included; 300 shells measured), so the shells take at most about
   * a twelfth of `memoryBytes`.
   */
  openShellMemoryBytes: 2 * 1024 * 1024,
  /**
   * A shell whose last command ended less than this long ago is not closed to make room for
   * another session's: when every idle shell of a full container is that recent, the newcomer's
   * command runs as a one-shot exec instead. More sessions than the cap taking turns would
   * otherwise close, in least recently used order, exactly the shell needed next.
   */
  shellKeepMs: 60_000,
  /**
   * Shells closed to make room exit in the background (the controller exits on EOF at once; the
   * engine reports the exec's end once every process holding its output let go). A new shell
   * waits for them only when this many of its container's are still exiting.
   */
  maxExitingShells: 8,
  /**
   * Group of the sandbox's users: `/workspace` and `/root` belong to `0:sandboxGid` with mode
   * 2770, so every per-session user of a slot can work in them and new files keep the group.
   */
  sandboxGid: 2_000_000,
  /**
   * First sandbox uid: `Sandbox#exec` (one-shot, no session) runs as this uid; sessions get
   * uids in `sessionUidBase + 1 … sessionUidBase + sessionUidCount`.
   */
  sessionUidBase: 2_000_001,
  /** Size of the session uid range (a session's first candidate is derived from its hash). */
  sessionUidCount: 16_777_216,
  /**
   * Session uids remembered per sandbox (container and session → uid): a claim is never
   * released while its container lives, so each is asked of the container once.
   */
  sessionUserCacheEntries: 10_000,
  /** Per-call exec timeout. */
  execTimeoutMs: 120_000,
  /** Cap on stdout and on stderr kept per call (each). */
  maxOutputBytes: 1024 * 1024,
  /** Grace period `docker stop` gives the container before SIGKILL. */
  stopGraceSeconds: 10,
  /**
   * Bound on a single lifecycle call (create, start, inspect, list, stop beyond its grace,
   * remove, a container read until the reader has named the file it opened);
   * `SandboxOptions.operationTimeoutMs`.
   */
  operationTimeoutMs: 30_000,
  /** Bound on finding or making a slot's container (probe, create, start). */
  provisionTimeoutMs: 60_000,
  /**
   * The warm pool (`settings.warmPool`) is emptied after this long without a new session
   * claiming from it, and filled again by the next new session. 10 minutes.
   */
  warmPoolIdleMs: 600_000,
  /**
   * A session shell unused this long is closed (it is reopened, with its state, on demand);
   * `settings.maxOpenShells` bounds how many are open before that.
   */
  shellIdleMs: 10 * 60_000,
  /** Bound on one whole cleanup (stop grace + remove + deleting directories). */
  cleanupTimeoutMs: 20_000,
  /**
   * How long a slot's delete container (the `rm` that runs where no link leads to the host)
   * may take before it is killed and the directory is left in place and reported.
   */
  slotDeleteTimeoutMs: 60_000,
  /**
   * Pids ceiling of a throwaway container (`runThrowaway`): its jobs are one `rm`, or the kill
   * script's shell with one `grep` (and a subshell) at a time, so a job that forks more is not
   * one of ours.
   */
  throwawayPidsLimit: 16,
  /**
   * Memory ceiling of the kill container (`killFromOutside`): a shell holding the target's
   * process table (at most `settings.pidsLimit` rows) and one `grep`. 64 MiB.
   */
  outsideKillMemoryBytes: 64 * 1024 * 1024,
  /**
   * Memory ceiling of a slot's delete container (`deleteInContainer`): what `rm -rf` holds
   * grows with the depth and width of the tree it walks, more than the kill needs. 256 MiB.
   */
  slotDeleteMemoryBytes: 256 * 1024 * 1024,
  /** Bound on each `mkfs.ext4`, `mount` and `umount` of a slot's disk image. */
  mountTimeoutMs: 30_000,
  /**
   * How long provisioning, cleanup or the reaper waits for a slot directory's lock held by
   * another process before failing (in-process waiters queue behind each other).
   */
  slotLockWaitMs: 120_000,
  /** A slot lock whose holder stopped refreshing it this long ago (it died) is taken over. */
  slotLockStaleMs: 20_000,
  /**
   * A slot lock seen this long without its owner record is taken over: a holder records itself
   * within milliseconds of making the lock and removes the record just before releasing it,
   * so a lock without one for this long lost its holder in one of those two moments.
   */
  slotLockUnrecordedMs: 3_000,
  /**
   * A held slot's bound directories (`workspace/`, `home/`) are checked for having been
   * deleted under its running container at most this often (two host `stat`s).
   */
  boundDirsCheckMs: 1_000,
  /** Bound `shutdown()` waits for outstanding cleanups. */
  shutdownTimeoutMs: 15_000,
  /**
   * A missing image's pull is given up when the engine sends nothing (no answer, no progress
   * line) for this long; a slow but moving download goes on.
   */
  pullStallTimeoutMs: 60_000,
  /** Bound on asking the engine whether its registry has an image (`checkRegistry`). */
  registryCheckTimeoutMs: 15_000,
  /** Bound on `DockerEngine#ping`. */
  pingTimeoutMs: 5_000,
  /** How long a killed command may take to report back before its shell is declared broken. */
  killGraceMs: 3_000,
  /**
   * A command whose stream ended without an exit code of its own (or with a signal's) in a
   * container that still shows running: how long the container may take to show stopped
   * (it was being stopped or removed) before the result is taken as the command's own.
   */
  containerLossGraceMs: 1_000,
  /** How long opening a session shell may take before one-shot exec is used instead. */
  shellOpenTimeoutMs: 10_000,
  /** Where files users send land in a session's container (`Sandbox#saveToInbox`). */
  inboxDir: "/workspace/inbox",
  /** Most UTF-8 bytes of an inbox file name, its extension and any `-2` suffix included. */
  inboxNameMaxBytes: 100,
  /** Bytes from the start of an inbox file handed to the classifier (file-type reads up to 4100). */
  inboxSniffBytes: 4100,
  /**
   * Inbox writes through the engine (tmpfs slots, remote engines): on top of
   * `operationTimeoutMs`, the time one MiB of the file may take to upload and copy.
   */
  inboxMsPerMiB: 1_000,
  /** The reaper never uses a lifetime below this when computing its age threshold. */
  reaperMinLifetimeSeconds: 60,
} as const satisfies {
  readonly dockerHost: string;
  readonly settings: Omit<SandboxSettings, "image" | "nanoCpus">;
  readonly [bound: string]: unknown;
};
