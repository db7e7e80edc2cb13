import { readFileSync } from "node:fs";
import { hostname } from "node:os";

/**
 * Which gateway process made something (a container, a journal entry), so a later process can
 * tell whether its owner is gone: `<hostname>/<boot id>/<pid>/<start time>`. The start time
 * (clock ticks since boot, from `/proc/<pid>/stat`) guards against a recycled pid; the boot id
 * against a reboot; the hostname against a gateway in another container sharing the engine.
 * This module imports nothing of the sandbox: it is also exported as `@mediagate/sandbox/instance`,
 * so the gateway's journal thread tells live owners from dead ones without loading dockerode.
 */
export type InstanceId = string;

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** Field 22 of `/proc/<pid>/stat` (start time); `undefined` when the process does not exist. */
function startTicksOf(pid: number): string | undefined {
  const stat = readOrEmpty(`/proc/${pid}/stat`);
  if (stat === "") return undefined;
  // The command name (field 2) is in parentheses and may contain spaces: split after it.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields[19];
}

function bootId(): string {
  return readOrEmpty("/proc/sys/kernel/random/boot_id").trim() || "unknown-boot";
}

let current: InstanceId | undefined;

/** This process's {@link InstanceId} (computed once). */
export function currentInstanceId(): InstanceId {
  current ??= [hostname(), bootId(), process.pid, startTicksOf(process.pid) ?? "0"].join("/");
  return current;
}

/**
 * Whether the process `id` names is still running: `"alive"`, `"gone"`, or `"unknown"` when
 * this process cannot tell (another host or container, or a malformed id). Callers treat
 * `"unknown"` as alive: nothing of a process that may still run is taken over or removed.
 */
export function instanceLiveness(id: string): "alive" | "gone" | "unknown" {
  const parts = id.split("/");
  if (parts.length !== 4) return "unknown";
  const [host, boot, pidText, ticks] = parts as [string, string, string, string];
  if (host !== hostname()) return "unknown";
  // Without a readable /proc (another OS, a restricted mount) nothing here can be judged.
  if (startTicksOf(process.pid) === undefined || bootId() === "unknown-boot") return "unknown";
  if (boot !== bootId()) return "gone";
  const pid = Number(pidText);
  if (!Number.isSafeInteger(pid) || pid <= 0) return "unknown";
  if (id === currentInstanceId()) return "alive";
  const now = startTicksOf(pid);
  return now !== undefined && now === ticks ? "alive" : "gone";
}
