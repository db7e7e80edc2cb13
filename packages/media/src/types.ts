import type { Readable } from "node:stream";

/** How a file is sent: the platform method it maps to (docs/media.md). */
export type MediaKind = "photo" | "animation" | "video" | "audio" | "voice" | "document";

/** Per-platform upload caps; see `telegramLimits` and `discordLimits`. */
export interface UploadLimits {
  /** Largest upload accepted for a file of this kind, in bytes. */
  maxBytes(kind: MediaKind): number;
}

/**
 * The live container, as far as media delivery needs it: the container-read fallback for a
 * file on no host mount (docs/media.md, translation step 3). packages/sandbox implements it (`Sandbox#readFile`
 * bound to a slot); this package never sees Docker.
 */
export interface ContainerFileSource {
  /**
   * Read `containerPath` from the container. Resolves `undefined` when it is missing or is
   * neither a regular file nor a symlink. A symlink must not be followed: answer its absolute
   * target (`linkTarget`), and the plan checks that path like a tag of its own. May resolve a `size` above
   * `maxBytes` (the plan then reports `too_large` without reading the stream) and should stop
   * streaming past `maxBytes`; the plan enforces the cap on the bytes it receives either way.
   */
  read(
    containerPath: string,
    maxBytes: number,
  ): Promise<{ size: number; stream: NodeJS.ReadableStream } | { linkTarget: string } | undefined>;
}

/**
 * The user a session's own commands run as in its container (docs/security.md, "Files in
 * replies"): a file found on the host is delivered only when this user could read it there.
 */
export interface FileReader {
  /** `undefined` when the session has no uid of its own there: only group and other bits count. */
  readonly uid: number | undefined;
  /** Every group it is in. */
  readonly gids: readonly number[];
}

/** Everything `planMedia` needs to find a tagged file on the host. All paths absolute. */
export interface TranslateContext {
  /**
   * `docker`: tags name container paths, translated through `volumes` and `slotDirs`.
   * `local`: tags name host paths, deliverable only under `allowDirs`.
   */
  readonly backend: "docker" | "local";
  /**
   * Slot directories, tried in order. Offer only directories the turn's container binds (the
   * gateway passes that container's slot dir alone): a `/workspace/…` path names its files.
   */
  readonly slotDirs: readonly string[];
  /** Configured binds, `host:container[:mode]`; named volumes (relative host) are skipped. */
  readonly volumes: readonly string[];
  /** `media.allowDirs`: opens system directories of the deny list, never credentials. */
  readonly allowDirs: readonly string[];
  /** Every profile home (and the root home): their secrets are never sent. */
  readonly protectedHomes: readonly string[];
  /**
   * Who must be able to read a file found on the host through `volumes` or `slotDirs`: the
   * session whose reply named it. Its owner, group and mode, and the search permission of
   * every directory on its way (links resolved the same way), are checked against this user;
   * a file it could not read is `denied`. Asked at most once per plan, when the first such
   * file is looked up; when it fails, those files are not found there. Without it (the local
   * backend, tests) the gateway's own permissions decide.
   */
  readonly reader?: (() => Promise<FileReader>) | undefined;
  /** Container-read fallback; without it a file on no mount is `unreachable`. */
  readonly container?: ContainerFileSource | undefined;
  /** Where the container fallback spools a file (created O_EXCL, unlinked at once). */
  readonly tmpDir: string;
  /**
   * Planning stops (rejects with the abort reason) before the next tag once this aborts: a
   * stopping gateway does not open or copy out more files.
   */
  readonly signal?: AbortSignal | undefined;
  /**
   * Files resolved per reply; later tags stay visible as `unreachable`. Default:
   * `Defaults.plan.maxFiles`.
   */
  readonly maxFiles?: number | undefined;
}

/** Where a candidate came from, for logs. */
export type CandidateSource = "volume" | "workspace" | "home" | "allow_dir" | "container";

/** Why a candidate was or was not used. */
export type CandidateResult =
  | "ok"
  | "missing"
  | "not_regular"
  | "escapes_root"
  | "denied"
  | "too_large"
  | "symlink"
  | "error";

/** One place a tagged path was looked for, with what was found there. */
export interface CandidateTrace {
  readonly source: CandidateSource;
  /** The candidate path (host path, or the container path for `container`). */
  readonly path: string;
  /** The directory the candidate must stay inside (empty for `container`). */
  readonly root: string;
  readonly result: CandidateResult;
  /** Extra context: the real path, an errno code, a byte count. */
  readonly detail?: string | undefined;
}

/**
 * A file held open for upload. The descriptor was opened without following a final symlink
 * and checked to be a regular file inside its root, so swapping the path afterwards changes
 * nothing that is sent.
 */
export interface OpenedFile {
  /** A fresh stream from byte 0 on the open descriptor, for each (re)try of an upload. */
  stream(): Readable;
  /**
   * The content from byte 0 as views of a few buffers reused in turn (see
   * {@link DescriptorFile.chunks}): a chunk is valid until {@link ChunkRing.buffers} - 1 more
   * were asked for. For a consumer that writes each chunk out before asking for more (an
   * upload through a socket); memory stays flat whatever the file's size.
   */
  chunks(): AsyncIterable<Uint8Array>;
  /** The whole content, read from the descriptor at offset 0. */
  read(): Promise<Buffer>;
  /** Close the descriptor; safe to repeat. */
  close(): Promise<void>;
}

/** A file that passed translation, policy and limits and is ready to upload. */
export interface ReadyMedia {
  readonly status: "ready";
  /** The path as tagged (normalized). */
  readonly path: string;
  readonly kind: MediaKind;
  /** Basename of the tagged path, the name shown in the chat. */
  readonly filename: string;
  readonly mime: string;
  readonly size: number;
  readonly file: OpenedFile;
  readonly candidates: readonly CandidateTrace[];
}

/** Not found on any layout (or over `maxFiles`); the tag stays visible in the text. */
export interface UnreachableMedia {
  readonly status: "unreachable";
  readonly path: string;
  /** `not_found` on every layout, or skipped because the reply named over `maxFiles` files. */
  readonly reason: "not_found" | "over_max_files";
  readonly candidates: readonly CandidateTrace[];
}

/** Refused by the delivery policy; the tag is removed and the path is never echoed. */
export interface DeniedMedia {
  readonly status: "denied";
  readonly path: string;
  readonly reason: string;
  readonly candidates: readonly CandidateTrace[];
}

/** Found and allowed, but over the platform's limit for its kind. */
export interface TooLargeMedia {
  readonly status: "too_large";
  readonly path: string;
  readonly kind: MediaKind;
  readonly size: number;
  readonly limit: number;
  readonly candidates: readonly CandidateTrace[];
}

/** What planning decided for one tag. */
export type MediaOutcome = ReadyMedia | UnreachableMedia | DeniedMedia | TooLargeMedia;

/** A reply split into text and files, with every descriptor it holds. */
export interface MediaPlan {
  /** Reply text: directives and resolved tags removed, unreachable tags kept. */
  readonly text: string;
  readonly asVoice: boolean;
  readonly asDocument: boolean;
  /** One outcome per distinct tag (and per distinct file), in reply order. */
  readonly outcomes: readonly MediaOutcome[];
  /** The `ready` outcomes, in order. */
  ready(): ReadyMedia[];
  /** Close every descriptor of the plan; safe to repeat. */
  dispose(): Promise<void>;
}

/** One tag's outcome in a {@link PlanRecord}: plain JSON, no descriptor. */
export type PlannedItem =
  | {
      readonly status: "ready";
      readonly path: string;
      readonly kind: MediaKind;
      readonly filename: string;
      readonly mime: string;
      readonly size: number;
      /** The real host path it was opened at; absent when it was read from the container. */
      readonly hostPath?: string | undefined;
    }
  | Omit<UnreachableMedia, "candidates">
  | Omit<DeniedMedia, "candidates">
  | Omit<TooLargeMedia, "candidates">;

/**
 * What planning decided for a reply, recorded with it before its first send so every attempt
 * delivers the same steps (docs/durability.md). Made by `recordPlan`, used by `resumePlan`.
 */
export interface PlanRecord {
  readonly version: 1;
  /** The text as planned (directives and resolved tags removed). */
  readonly text: string;
  readonly asVoice: boolean;
  readonly asDocument: boolean;
  /** One per outcome of the plan, in its order. */
  readonly items: readonly PlannedItem[];
}

/** Options of `resumePlan`. */
export interface ResumeOptions {
  /**
   * Whether the ready item with this (tagged) path is opened again; default every one. An item
   * an earlier attempt finished need not be: it is never read.
   */
  readonly reopen?: ((path: string) => boolean) | undefined;
}

/** A plan rebuilt from its record. */
export interface ResumedPlan {
  readonly plan: MediaPlan;
  /**
   * Ready items of the record that no longer pass (gone, refused, too large), with their new
   * outcome; they are in `plan.outcomes` too, in their place.
   */
  readonly lost: readonly MediaOutcome[];
}
