import { join } from "node:path";
import { MediagateError } from "@mediagate/io";
import { sanitizeForPath } from "./sanitize-path.js";

/**
 * The grammar of slot keys: the one place that knows what a slot string means. Labels,
 * container names and lookups, the reaper, slot directories and the gateway all ask here
 * instead of checking prefixes themselves.
 *
 * | slot string            | kind      | spans profiles | dirs are data | sessions share it | dir in       |
 * | ---------------------- | --------- | -------------- | ------------- | ----------------- | ------------ |
 * | `default`              | `default` | no             | yes           | yes               | profile home |
 * | `profile:<name>`       | `profile` | no             | yes           | yes               | profile home |
 * | `shared:<key>`         | `shared`  | yes            | yes           | yes               | root home    |
 * | `session:<sessionKey>` | `session` | no             | no            | no                | profile home |
 * | anything else          | `task`    | no             | no            | yes               | profile home |
 *
 * Parsing is total on non-empty strings (each is exactly one slot) and {@link formatSlotKey}
 * is its inverse, so a slot string and its parsed form name the same container and directory.
 */
export type SlotKey =
  | { readonly kind: "default" }
  | { readonly kind: "profile"; readonly name: string }
  | { readonly kind: "shared"; readonly key: string }
  | { readonly kind: "session"; readonly sessionKey: string }
  | { readonly kind: "task"; readonly taskId: string };

/** The kinds of {@link SlotKey}. */
export type SlotKind = SlotKey["kind"];

/** What a slot kind means for the container and the directories behind it. */
export interface SlotTraits {
  /**
   * One container for every profile of the install that uses the slot (`shared:<key>`):
   * looked up without the profile label, named without the profile, and its directory lives
   * under the root home instead of a profile home.
   */
  readonly spansProfiles: boolean;
  /**
   * The slot's `workspace/` and `home/` outlive any one container (the profile's or a shared
   * workspace): the reaper and cleanup keep them; scratch slots' dirs go with their container.
   */
  readonly persistentData: boolean;
  /**
   * Several chat sessions may run in the slot's container, so a teardown (`/reset`) affects
   * more than the asking session. Task slots count as shared: sub-agents of other runs may
   * alias into them.
   */
  readonly sharedBySessions: boolean;
  /** Which home holds the slot's directory: the root home for slots that span profiles. */
  readonly dirHome: "root" | "profile";
}

/** The traits of each kind (see the table on {@link SlotKey}). */
export const SlotKindTraits = {
  default: {
    spansProfiles: false,
    persistentData: true,
    sharedBySessions: true,
    dirHome: "profile",
  },
  profile: {
    spansProfiles: false,
    persistentData: true,
    sharedBySessions: true,
    dirHome: "profile",
  },
  shared: { spansProfiles: true, persistentData: true, sharedBySessions: true, dirHome: "root" },
  session: {
    spansProfiles: false,
    persistentData: false,
    sharedBySessions: false,
    dirHome: "profile",
  },
  task: { spansProfiles: false, persistentData: false, sharedBySessions: true, dirHome: "profile" },
} as const satisfies Record<SlotKind, SlotTraits>;

const DefaultSlotString = "default";

/** The prefixed kinds and their prefixes, in the order they are tried. */
const Prefixes = [
  ["profile", "profile:"],
  ["shared", "shared:"],
  ["session", "session:"],
] as const;

/** The label-safe form of each prefix (`:` becomes `_` in labels), for {@link keepsDirsBySlotLabel}. */
const LabelPrefixes = ["profile_", "shared_"] as const;

/** Thrown when a slot cannot be written down without meaning another slot. */
export class SlotKeyError extends MediagateError {
  override readonly name = "SlotKeyError";
  readonly code = "MG_SLOT_KEY_INVALID";
  constructor(
    message: string,
    readonly key: SlotKey,
  ) {
    super(message);
  }
}

/**
 * Reads a slot string: every non-empty string is exactly one slot (a string that matches no
 * reserved form is a task id). The empty string is none and throws {@link SlotKeyError}.
 */
export function parseSlotKey(slot: string): SlotKey {
  if (slot.length === 0) {
    throw new SlotKeyError("a slot key must not be empty", { kind: "task", taskId: slot });
  }
  if (slot === DefaultSlotString) return { kind: "default" };
  for (const [kind, prefix] of Prefixes) {
    if (!slot.startsWith(prefix)) continue;
    const rest = slot.slice(prefix.length);
    switch (kind) {
      case "profile":
        return { kind, name: rest };
      case "shared":
        return { kind, key: rest };
      case "session":
        return { kind, sessionKey: rest };
    }
  }
  return { kind: "task", taskId: slot };
}

/**
 * Writes a slot key down. A task id that is empty or would read back as another kind
 * (`default`, `profile:…`, `shared:…`, `session:…`) throws {@link SlotKeyError}: such a task
 * would otherwise run in that slot's container (a task named `shared:team` in the team's).
 */
export function formatSlotKey(key: SlotKey): string {
  switch (key.kind) {
    case "default":
      return DefaultSlotString;
    case "profile":
      return `profile:${key.name}`;
    case "shared":
      return `shared:${key.key}`;
    case "session":
      return `session:${key.sessionKey}`;
    case "task": {
      if (key.taskId.length === 0) throw new SlotKeyError("a task id must not be empty", key);
      if (parseSlotKey(key.taskId).kind !== "task") {
        throw new SlotKeyError(
          `task id ${JSON.stringify(key.taskId)} reads as a ${parseSlotKey(key.taskId).kind} slot; rename the task`,
          key,
        );
      }
      return key.taskId;
    }
  }
}

/** The slot key of a profile's long-lived container: `default` for the default profile. */
export function profileSlotKey(profile: string): SlotKey {
  return profile === DefaultSlotString ? { kind: "default" } : { kind: "profile", name: profile };
}

/** The traits of a slot (string or parsed). */
export function slotTraits(slot: string | SlotKey): SlotTraits {
  const key = typeof slot === "string" ? parseSlotKey(slot) : slot;
  return SlotKindTraits[key.kind];
}

/** Where slot directories live: the root home (slots spanning profiles) or the profile home. */
export interface SlotHomes {
  readonly profileHome: string;
  readonly rootHome: string;
  /**
   * A directory laid out like a home (`<dataSlotsRoot>/sandboxes/docker/`, with its locks and
   * disk images beside) where the slots whose directories are data (`default`, `profile:…`,
   * `shared:…`) live instead of the homes: one every replica of a cluster sees
   * (`cluster.slotsDir`, docs/cluster.md). Their names are unique across profiles, so they
   * sit side by side.
   */
  readonly dataSlotsRoot?: string | undefined;
}

/** The directory under which a home keeps its slot directories: `<home>/sandboxes/docker`. */
export function slotRootOf(home: string): string {
  return join(home, "sandboxes", "docker");
}

/**
 * The host directory of a slot: `<home>/sandboxes/docker/<sanitizeForPath(slot)>`, where
 * `<home>` is the root home for slots that span profiles and the profile home otherwise; a slot
 * whose directories are data lives under `<dataSlotsRoot>` instead, when that is set.
 */
export function slotDirectoryFor(slot: string, homes: SlotHomes): string {
  if (homes.dataSlotsRoot !== undefined && slotTraits(slot).persistentData) {
    return join(slotRootOf(homes.dataSlotsRoot), sanitizeForPath(slot));
  }
  const home = slotTraits(slot).dirHome === "root" ? homes.rootHome : homes.profileHome;
  return join(slotRootOf(home), sanitizeForPath(slot));
}

/**
 * Whether the dirs of a container made before the `mediagate.persistent` label existed are
 * data, judged from its label-safe slot value (`default`, `profile_…`, `shared_…`). The
 * label is lossy (`:` became `_`), so this is the only reading of a slot label there is.
 */
export function keepsDirsBySlotLabel(slotLabel: string): boolean {
  return (
    slotLabel === DefaultSlotString || LabelPrefixes.some((prefix) => slotLabel.startsWith(prefix))
  );
}
