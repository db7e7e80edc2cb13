import { readdir, readFile } from "node:fs/promises";

/** CPU time (user + system) a process has used, in ms (`/proc/<pid>/stat`, clock ticks of 10 ms). */
export async function cpuMsOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
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

/**
 * CPU time of every running process whose command name (`/proc/<pid>/comm`, 15 characters at
 * most) is one of `names`, in ms. A process that ends in between takes its time with it.
 */
export async function processesCpuMs(names: ReadonlySet<string>): Promise<number> {
  let total = 0;
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const comm = (await readFile(`/proc/${entry}/comm`, "utf8")).trim();
      if (names.has(comm)) total += await cpuMsOf(Number(entry));
    } catch {
      // Gone between the listing and the read.
    }
  }
  return total;
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
