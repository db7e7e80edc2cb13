import { formatSlotKey, profileSlotKey, type SlotKey } from "./slot-key.js";
import type { SlotScope, TaskOverride } from "./types.js";

/** Slot of runs that have no session and no shared key (and of the default profile). */
export const DefaultSlot = "default";

interface TaskEntry {
  readonly override: TaskOverride | undefined;
  readonly parentId: string | undefined;
}

/**
 * What `resolveSlot` knows about running tasks: environment overrides (docs/sandbox.md, slot rule 1) and
 * the sub-task → parent aliases (rule 2). One registry per process or per gateway.
 */
export class TaskRegistry {
  readonly #tasks = new Map<string, TaskEntry>();

  /** Records a task; registering an id again replaces its entry. */
  register(taskId: string, entry: { override?: TaskOverride; parentId?: string } = {}): void {
    this.#tasks.set(taskId, { override: entry.override, parentId: entry.parentId });
  }

  unregister(taskId: string): void {
    this.#tasks.delete(taskId);
  }

  /** True when the task's override sets `image` or `backend` (a `cwd` alone does not isolate). */
  isolates(taskId: string): boolean {
    const override = this.#tasks.get(taskId)?.override;
    if (override === undefined) return false;
    return isSet(override.image) || isSet(override.backend);
  }

  /**
   * Follows the sub-task → parent chain to the task whose container a sub-agent shares.
   * A parent that is not registered (dangling) aliases to `default`. On a cycle the walk
   * stops at the last task before the repeat, so the answer is deterministic.
   */
  root(taskId: string): string {
    const seen = new Set<string>([taskId]);
    let current = taskId;
    for (;;) {
      const parentId = this.#tasks.get(current)?.parentId;
      if (parentId === undefined) return current;
      if (seen.has(parentId)) return current;
      if (!this.#tasks.has(parentId)) return DefaultSlot;
      seen.add(parentId);
      current = parentId;
    }
  }
}

function isSet(value: string | undefined): boolean {
  return value !== undefined && value.length > 0;
}

/**
 * Maps a tool call to the slot key of the container it runs in (docs/sandbox.md; first rule wins):
 * 1. the task's override sets `image`/`backend` → the task id;
 * 2. non-persistent Docker with a task id → the task id, following the parent alias chain;
 * 3. persistent Docker with a (trimmed, non-empty) shared key → `shared:<key>`;
 * 4. no session key → `default`;
 * 5. not persistent Docker (SSH, local, non-persistent Docker) → `session:<sessionKey>`;
 * 6. persistent Docker → `default` for the default profile, else `profile:<name>`.
 *
 * The key is written by the slot-key grammar ({@link formatSlotKey}); a task id that would
 * read as another kind of slot (`default`, `shared:…`) throws instead of landing there.
 */
export function resolveSlot(
  taskId: string | undefined,
  scope: SlotScope,
  tasks?: TaskRegistry,
): string {
  return formatSlotKey(resolveSlotKey(taskId, scope, tasks));
}

function resolveSlotKey(
  taskId: string | undefined,
  scope: SlotScope,
  tasks: TaskRegistry | undefined,
): SlotKey {
  const hasTask = taskId !== undefined && taskId.length > 0;
  if (hasTask && tasks?.isolates(taskId)) return { kind: "task", taskId };
  const persistentDocker = scope.backend === "docker" && scope.persistent;
  if (scope.backend === "docker" && !scope.persistent && hasTask) {
    const root = tasks ? tasks.root(taskId) : taskId;
    return root === DefaultSlot ? { kind: "default" } : { kind: "task", taskId: root };
  }
  const sharedKey = scope.sharedKey?.trim() ?? "";
  if (persistentDocker && sharedKey.length > 0) return { kind: "shared", key: sharedKey };
  const sessionKey = scope.sessionKey;
  if (sessionKey === undefined || sessionKey.length === 0) return { kind: "default" };
  if (!persistentDocker) return { kind: "session", sessionKey };
  return profileSlotKey(scope.profile);
}
