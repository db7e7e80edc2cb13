/**
 * Public contract of @mediagate/sandbox. No dockerode type appears here: the gateway
 * talks to the sandbox only through these shapes (docs/architecture.md, the rule "Docker access behind
 * a small interface of our own").
 */

/** Where tool calls execute. `docker` is the only backend this package runs containers for. */
export type BackendKind = "docker" | "ssh" | "local";

/** Everything `resolveSlot` needs to know about the run a tool call belongs to (docs/sandbox.md). */
export interface SlotScope {
  readonly backend: BackendKind;
  /** Persistent Docker: one long-lived container per profile (or shared key). */
  readonly persistent: boolean;
  /** Profile name; `"default"` for the default profile. */
  readonly profile: string;
  /** The bound session key, when a session is bound. */
  readonly sessionKey?: string | undefined;
  /** `sandbox.sharedKey` of the profile, untrimmed as configured. */
  readonly sharedKey?: string | undefined;
}

/** A task's environment override; `image` or `backend` isolate the task into its own slot. */
export interface TaskOverride {
  readonly image?: string | undefined;
  readonly backend?: BackendKind | undefined;
  readonly cwd?: string | undefined;
}

/** Sandbox settings of one profile, already validated and defaulted by the gateway. */
export interface SandboxSettings {
  readonly image: string;
  /**
   * Container lifetime. `true` (default): one long-lived container per profile (or shared
   * key), kept running across turns and processes. `false`: one container per session (or
   * task) slot, removed with its slot dirs after `lifetimeSeconds` idle, on `/stop`, and on
   * shutdown.
   */
  readonly persistent: boolean;
  /**
   * Where `/workspace` and `/root` live. `"bind"` (default): the slot's `workspace/` and
   * `home/` dirs on the host, so the gateway finds the agent's files there for delivery.
   * `"tmpfs"`: in memory only; nothing reaches the host disk, and files there are delivered
   * as media through the container read (`Sandbox#readFile`).
   */
  readonly filesystem: "bind" | "tmpfs";
  /**
   * Probe for a labelled container left by another process before creating. Default true.
   * A scratch (session or task) container whose process is gone is replaced, not adopted.
   */
  readonly persistAcrossProcesses: boolean;
  /**
   * Run the orphan reaper for this profile once per process (`Sandbox#reapOrphansOnce`, at
   * start or first use): scratch containers whose gateway process is gone, running or not,
   * and old exited containers, with their scratch slot dirs. Default true.
   */
  readonly orphanReaper: boolean;
  /**
   * Container lifetime used by the reaper's age threshold. Default:
   * `Defaults.settings.lifetimeSeconds`.
   */
  readonly lifetimeSeconds: number;
  /** Docker network mode. Default `"none"`. */
  readonly network: string;
  /**
   * Memory ceiling of the container (Docker `Memory`). Default: `Defaults.settings.memoryBytes`.
   */
  readonly memoryBytes: number;
  readonly nanoCpus?: number | undefined;
  /**
   * Process ceiling of the container (Docker `PidsLimit`). Default: `Defaults.settings.pidsLimit`.
   */
  readonly pidsLimit: number;
  /**
   * Size of each tmpfs mount (`/workspace`, `/root`) of a tmpfs filesystem. Default:
   * `Defaults.settings.tmpfsBytes`.
   */
  readonly tmpfsBytes: number;
  /**
   * Size of each of the container's own writable places outside `/workspace` and `/root`:
   * `/tmp`, `/var/tmp` and the gateway's `/run/mediagate` (per-session shell state, the
   * session-uid registry, files users send on their way into the inbox), each a tmpfs of
   * this size, since the root filesystem is read-only. A write past it fails with ENOSPC.
   * Default `Defaults.settings.scratchBytes`.
   */
  readonly scratchBytes: number;
  /**
   * Per-slot ceiling on what a bind filesystem's slot writes to the host disk: the slot
   * directory is an ext4 image of this size, loop-mounted `nosuid,nodev` (needs root and a
   * loop device). Default: `Defaults.settings.diskLimitBytes`; `0` = no ceiling and a plain
   * directory.
   */
  readonly diskLimitBytes: number;
  /** Extra binds, `host:container[:mode]`. */
  readonly volumes: readonly string[];
  /** Trimmed shared key; empty string means strict per-profile isolation. */
  readonly sharedKey: string;
  /**
   * Who runs commands in the container. `"per-session"` (default): every chat session gets
   * its own uid (group `Defaults.sandboxGid`), so sessions cannot read each other's shell
   * state, environment or processes, and nothing they make is owned by root; the container
   * keeps root only for the gateway's own housekeeping, with four capabilities. `"root"`:
   * everything runs as the image's user (root) with no capabilities, for images that need
   * it; sessions are not isolated from each other.
   */
  readonly user: "per-session" | "root";
  /**
   * Per-session mode: the most processes one session's uid may have at once (RLIMIT_NPROC,
   * counted per uid across the whole host), so a fork loop in one session leaves room for
   * the others under `pidsLimit`. Default: `Defaults.settings.sessionProcessLimit`.
   */
  readonly sessionProcessLimit: number;
  /**
   * Per-session settings (`persistent: false`): how many started containers are kept ready for
   * sessions that have none yet, so a new session's first command skips creating and starting
   * one (docs/sandbox.md, "Warm pool"). 0 (or left out) turns the pool off; it fills only once
   * `Sandbox#warmUp` is called. Default in the gateway: `Defaults.settings.warmPool`.
   */
  readonly warmPool?: number;
  /**
   * Most session shells open at once in one container (each is a process counted against
   * `pidsLimit`). Opening one more closes the least recently used idle one first; its
   * session keeps its cwd and exports and gets a new shell on its next command. A shell used
   * within `Defaults.shellKeepMs` is not closed for another session's, and while every open
   * shell is running a command or that recent, a session's command runs as a one-shot exec
   * with its state. Default: derived from `pidsLimit` and `memoryBytes` (`maxOpenShellsOf`).
   */
  readonly maxOpenShells?: number | undefined;
  /**
   * How a session shell gets its commands and gives its output (docs/sandbox.md, "How commands
   * reach the shell"): `auto` (the default) through FIFOs in the session's private state
   * directory when the gateway can reach the container's registry volume on this host and the
   * sessions have uids of their own, else through the exec's stream; `exec` always through the
   * exec's stream.
   */
  readonly shellChannel?: "auto" | "exec" | undefined;
}

export interface ExecOptions {
  /** Time limit of the command. Default: `Defaults.execTimeoutMs`. */
  readonly timeoutMs?: number;
  /**
   * Cap on stdout + stderr kept, each; the rest is dropped and `truncated` is set. Default:
   * `Defaults.maxOutputBytes`.
   */
  readonly maxOutputBytes?: number;
  /**
   * Kills what the call started. While the slot's container is still being made (or its
   * image pulled) an abort rejects the call at once with the signal's reason.
   */
  readonly signal?: AbortSignal;
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Awaited once the container is ready, just before the command goes to it: the gateway
   * journals there that the turn's commands begin (a turn cut off before that is safe to run
   * again). A rejection stops the command.
   */
  readonly beforeCommand?: (() => Promise<void>) | undefined;
  /**
   * Told each piece of the command's output as it arrives, for a live view (the gateway's
   * streamed preview of a shell command: docs/streaming.md): the bytes the result keeps (at
   * most `maxOutputBytes` of each stream), in arrival order, stdout and stderr interleaved.
   * Called synchronously; a throw is ignored.
   */
  readonly onOutput?: OutputListener | undefined;
}

/** See `ExecOptions.onOutput`. The chunk is only valid during the call. */
export type OutputListener = (chunk: Buffer, stream: "stdout" | "stderr") => void;

export interface ExecResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly truncated: boolean;
  readonly timedOut: boolean;
  readonly aborted: boolean;
  readonly durationMs: number;
}

export type ContainerState =
  | "created"
  | "running"
  | "paused"
  | "restarting"
  | "removing"
  | "exited"
  | "dead"
  | "missing";

/** One of this gateway's containers, as `mediagate sandbox ls` shows it. */
export interface ContainerSummary {
  readonly id: string;
  readonly name: string;
  readonly slot: string;
  readonly profile: string;
  readonly state: ContainerState;
  readonly image: string;
  readonly createdAt: Date;
  readonly finishedAt?: Date | undefined;
}

/** One container as the web console shows it (docs/web-console.md). */
export interface ContainerInventory extends ContainerSummary {
  /** The slot directory on the host it binds as `/workspace`'s parent (none with tmpfs). */
  readonly slotDir?: string | undefined;
  /** Processes running in it (`docker top`), for a running container. */
  readonly processes?: number | undefined;
  /**
   * Why the orphan reaper would remove it, when it would: its gateway process is gone (a
   * scratch container), or it exited longer ago than the reaper's minimum age.
   */
  readonly orphan?: string | undefined;
}

/**
 * A mediagate container made before containers carried their install (no
 * `mediagate.install` label), as `mediagate sandbox ls` notes it.
 */
export interface LegacyContainer extends ContainerSummary {
  /**
   * The slot directory of this install its `/workspace` binds: such a container is this
   * install's and is retired (stopped and removed, dirs kept) at the first acquire of a
   * process and by `reapOrphans`. `undefined`: not attributable to this install (another
   * install's, or a tmpfs container binding nothing); it is left alone.
   */
  readonly slotDir: string | undefined;
}

/**
 * Who a session's commands run as in a slot's container (`Sandbox#sessionIdentity`): a file
 * is the session's to read when its owner, group and mode grant this user read.
 */
export interface SessionIdentity {
  /** `undefined`: the session has no uid of its own there (only group and other bits count). */
  readonly uid: number | undefined;
  /** Every group it is in. */
  readonly gids: readonly number[];
}

/** A file read out of a live container by `Sandbox#readFile` (the media fallback). */
export interface ContainerFile {
  readonly size: number;
  readonly stream: NodeJS.ReadableStream;
}

/**
 * What `Sandbox#readFile` answers for a path that is not canonical: any component of it
 * (a parent directory as well as the file itself) is a symlink, or it is not in normal form
 * (`.`, `..`, `//`, a trailing `/`). `linkTarget` is the canonical path: absolute, every link
 * resolved. Nothing is read for such a path; the caller decides, so the credential policy
 * is applied to the real path, and reads the canonical path with a second call.
 */
export interface ContainerLink {
  readonly linkTarget: string;
}

/** What an orphan sweep did: removed container ids, and the ones whose removal failed. */
export interface ReapResult {
  readonly removed: string[];
  readonly failed: { id: string; error: string }[];
}

/**
 * A moment of an image pull worth reporting (`DockerEngine#pullImage`): the start, a layer's
 * download at each quarter, a finished layer, the end. `text` is the same as one line.
 */
export interface ImagePullProgress {
  readonly image: string;
  /** The engine's status: `Pulling from …`, `Downloading`, `Pull complete`, `Already exists`, `Status: …`. */
  readonly status: string;
  /** The layer (short id) it is about, if any. */
  readonly layer: string | undefined;
  /** While downloading: bytes of the layer received and its size. */
  readonly currentBytes: number | undefined;
  readonly totalBytes: number | undefined;
  /** Layers finished (pulled or already on the engine) of those the engine named so far. */
  readonly layersDone: number;
  readonly layers: number;
  /** One line for a log: `pulling <image>: layer <id> 50% of 12.3 MB (1/3 layers)`. */
  readonly text: string;
}

/** Whether the engine can pull an image (`DockerEngine#checkRegistry`), and why not. */
export type RegistryCheck =
  | { readonly pullable: true }
  | { readonly pullable: false; readonly reason: string };

/** Options of `Sandbox#reapOrphans`. */
export interface ReapOptions {
  /** The time the ages are measured at. Default: the sandbox's clock. */
  readonly now?: Date | undefined;
  /**
   * An exited container is removed once it finished more than this long ago. Default
   * `2 × max(Defaults.reaperMinLifetimeSeconds, lifetimeSeconds)`. Containers whose gateway
   * process is gone, and legacy ones, do not depend on it.
   */
  readonly minAgeSeconds?: number | undefined;
}

/** What `Sandbox#reapOrphans` did, and the minimum age it applied to exited containers. */
export interface ReapReport extends ReapResult {
  readonly minAgeSeconds: number;
}

/** One file a user sent, for `Sandbox#saveToInbox`. */
export interface InboxFile {
  /** The name the user's platform gave it; any string (sanitized into the inbox name). */
  readonly name: string;
  /**
   * The bytes, read once and streamed (never held whole): a Node `Readable` or any (async)
   * iterable of byte chunks. Each chunk is used up (hashed, written) before the next one is
   * asked for, so a source may read every chunk into the same buffer. A source that is not
   * read (refused unread, or the call was aborted first) is destroyed when it has a `destroy`
   * method.
   */
  readonly source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>;
  /** Most bytes accepted; one byte more and the file is refused (`too_large`). */
  readonly maxBytes: number;
  /** The size the platform announced, when it did: over `maxBytes`, the file is refused unread. */
  readonly declaredBytes?: number | undefined;
}

/** What a file is, by its content: the classifier's answer (`@mediagate/media`'s `classify`). */
export interface InboxKind {
  readonly kind: string;
  readonly mime: string;
}

/**
 * Recognises a file by its first bytes (up to `Defaults.inboxSniffBytes`; fewer for a shorter
 * file) and its inbox name, the way outbound media are classified.
 */
export type InboxClassifier<K extends InboxKind = InboxKind> = (
  head: Uint8Array,
  filename: string,
) => K | Promise<K>;

/** Options of `Sandbox#saveToInbox`. */
export interface InboxOptions<K extends InboxKind = InboxKind> {
  /** The session the files are for: they are owned by the user its commands run as. */
  readonly sessionKey: string;
  readonly classify: InboxClassifier<K>;
  /**
   * Stops the call: the file being written fails (`aborted`, nothing left) and so do the rest.
   * While the slot's container is still being made the call rejects at once with its reason.
   */
  readonly signal?: AbortSignal | undefined;
}

/** A file that landed in the inbox, complete, under its final name. */
export interface InboxSaved<K extends InboxKind = InboxKind> {
  readonly status: "saved";
  /** The name it was sent with. */
  readonly name: string;
  /** Its name in the inbox (sanitized, unique: `-2`, `-3`… when taken). */
  readonly filename: string;
  /** `/workspace/inbox/<filename>`. */
  readonly containerPath: string;
  /** The same file on the gateway's host: bind slots on a local engine only. */
  readonly hostPath: string | undefined;
  readonly kind: K["kind"];
  readonly mime: string;
  readonly size: number;
  /** Hex SHA-256 of the bytes written. */
  readonly sha256: string;
}

/**
 * Why a file did not land: over its limit (announced or counted), its source failed, no space
 * (the slot's disk ceiling, the tmpfs size, or the host disk), `/workspace/inbox` is not a
 * directory the gateway may write into (a link, a file), the call was aborted (or the slot
 * reset), or anything else (`failed`: the engine, the container).
 */
export type InboxFailure =
  | "too_large"
  | "source_failed"
  | "no_space"
  | "inbox_unusable"
  | "aborted"
  | "failed";

/** A file that did not land; nothing of it is left in the inbox. */
export interface InboxRefused {
  readonly status: "refused";
  /** The name it was sent with. */
  readonly name: string;
  readonly reason: InboxFailure;
  /** Says why in a sentence, naming the file (its sanitized name) and the limit when there is one. */
  readonly message: string;
}

export type InboxResult<K extends InboxKind = InboxKind> = InboxSaved<K> | InboxRefused;
