import { readdir, readFile } from "node:fs/promises";

/** CPU time (user + system) a process has used, in ms (`/proc/<pid>/stat`, clock ticks of 10 ms). */
export function cpuMsOf(pid: number): Promise<number> {
  return cpuMsIn(`/proc/${pid}/stat`);
}

/**
 * CPU time (user + system) of a process's main thread alone, in ms (`/proc/<pid>/task/<pid>/stat`):
 * in Node, the thread of the event loop; its other threads are the worker threads, libuv's pool
 * and V8's helpers (the garbage collector's among them).
 */
export function mainThreadCpuMsOf(pid: number): Promise<number> {
  return cpuMsIn(`/proc/${pid}/task/${pid}/stat`);
}

/**
 * CPU time (ms) of each thread of a process by its name (`/proc/<pid>/task/<tid>/comm`), the
 * threads of one name added up; a thread that has exited is no longer counted. The gateway
 * names its database threads (`mg-journal`, `mg-state`, `mg-check`); Node calls all its own
 * threads `node` (the main one, V8's helpers, libuv's pool).
 */
export async function threadCpuMsByName(pid: number): Promise<Map<string, number>> {
  const byName = new Map<string, number>();
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    const name = await readFile(`/proc/${pid}/task/${tid}/comm`, "utf8").catch(() => undefined);
    const ms = await cpuMsIn(`/proc/${pid}/task/${tid}/stat`).catch(() => undefined);
    if (name === undefined || ms === undefined) continue;
    byName.set(name.trim(), (byName.get(name.trim()) ?? 0) + ms);
  }
  return byName;
}

async function cpuMsIn(statFile: string): Promise<number> {
  const stat = await readFile(statFile, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** `VmRSS` and `VmHWM` of a process, in bytes. */
export async function memoryOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const field = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1]) * 1024;
  return { rss: field("VmRSS"), peak: field("VmHWM") };
}

/**
 * CPU time the whole machine spent busy (all cores), in ms: idle, iowait and the time the
 * hypervisor gave to other guests (steal) left out.
 */
export async function machineBusyMs(): Promise<number> {
  const stat = await readFile("/proc/stat", "utf8");
  const fields = (stat.split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = fields;
  return (user + nice + system + irq + softirq) * 10;
}

/** The engine's own processes (the exec streams of the shells pass through them). */
export const EngineProcesses: ReadonlySet<string> = new Set([
  "dockerd",
  "containerd",
  "containerd-shim",
]);

/**
 * `measure` of every running process whose command name (`/proc/<pid>/comm`, 15 characters at
 * most) is one of `names`, summed. A process that ends in between counts nothing.
 */
async function sumOverProcesses(
  names: ReadonlySet<string>,
  measure: (pid: number) => Promise<number>,
): Promise<number> {
  let total = 0;
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const comm = (await readFile(`/proc/${entry}/comm`, "utf8")).trim();
      if (names.has(comm)) total += await measure(Number(entry));
    } catch {
      // Gone between the listing and the read.
    }
  }
  return total;
}

/** CPU time of every running process whose command name is one of `names`, in ms. */
export function processesCpuMs(names: ReadonlySet<string>): Promise<number> {
  return sumOverProcesses(names, cpuMsOf);
}

/** `VmRSS` of every running process whose command name is one of `names`, in bytes. */
export function processesRss(names: ReadonlySet<string>): Promise<number> {
  return sumOverProcesses(names, async (pid) => (await memoryOf(pid)).rss);
}

/**
 * CPU time of everything that ran in container `id` (full id) since it started, in ms, from
 * its cgroup (v1 `cpuacct`, or v2 under the systemd or cgroupfs driver); `undefined` when no
 * cgroup of it is found.
 */
export async function containerCpuMs(id: string): Promise<number | undefined> {
  const v1 = await readFile(`/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`, "utf8").catch(
    () => undefined,
  );
  if (v1 !== undefined) return Number(v1.trim()) / 1e6;
  for (const dir of [`system.slice/docker-${id}.scope`, `docker/${id}`]) {
    const stat = await readFile(`/sys/fs/cgroup/${dir}/cpu.stat`, "utf8").catch(() => undefined);
    const usec = stat === undefined ? undefined : /^usage_usec (\d+)$/m.exec(stat)?.[1];
    if (usec !== undefined) return Number(usec) / 1000;
  }
  return undefined;
}

/**
 * `VmRSS` and `Pss` (`/proc/<pid>/smaps_rollup`: each shared page divided among the processes
 * that map it) summed over `pids`, in bytes. A process that ends in between counts nothing.
 */
export async function processesMemory(
  pids: readonly number[],
): Promise<{ rss: number; pss: number }> {
  let rss = 0;
  let pss = 0;
  for (const pid of pids) {
    try {
      rss += (await memoryOf(pid)).rss;
      const rollup = await readFile(`/proc/${pid}/smaps_rollup`, "utf8");
      pss += Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
    } catch {
      // Gone between the listing and the read.
    }
  }
  return { rss, pss };
}

/**
 * Memory charged to container `id` (full id) right now, in bytes, from its cgroup (v1
 * `memory.usage_in_bytes`, or v2 `memory.current` under the systemd or cgroupfs driver; page
 * cache included); `undefined` when no cgroup of it is found.
 */
export async function containerMemoryBytes(id: string): Promise<number | undefined> {
  for (const file of [
    `memory/docker/${id}/memory.usage_in_bytes`,
    `memory/system.slice/docker-${id}.scope/memory.usage_in_bytes`,
    `system.slice/docker-${id}.scope/memory.current`,
    `docker/${id}/memory.current`,
  ]) {
    const text = await readFile(`/sys/fs/cgroup/${file}`, "utf8").catch(() => undefined);
    if (text !== undefined) return Number(text.trim());
  }
  return undefined;
}
