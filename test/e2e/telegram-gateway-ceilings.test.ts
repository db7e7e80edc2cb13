import { execFileSync } from "node:child_process";
import { access, readFile, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1001;
const MiB = 1024 * 1024;
const DiskLimitBytes = 64 * MiB;

/**
 * Issue 8, case 10: resource ceilings hold through the gateway. A user who writes more than
 * the profile's `diskLimitBytes` into /workspace gets "No space left on device" and the host
 * file behind the slot stays within the ceiling; the container has a memory ceiling and the
 * pids ceiling by default; `/reset confirm` leaves no mount or loop device behind.
 */
describe("gateway over Telegram: resource ceilings", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-ceil", [
      { admins: [Admin], sandbox: { diskLimitBytes: DiskLimitBytes } },
    ]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  const ask = async (text: string) => {
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text }));
    return bot.texts(Admin, since).join("\n");
  };
  const image = () => {
    const slotDir = bot.profileSlotDir();
    return join(dirname(dirname(slotDir)), "disks", "docker", `${basename(slotDir)}.ext4`);
  };
  const pathExists = (path: string) =>
    access(path).then(
      () => true,
      () => false,
    );
  const mountsBelow = async (dir: string) =>
    (await readFile("/proc/self/mountinfo", "utf8"))
      .split("\n")
      .map((line) => line.split(" ")[4] ?? "")
      .filter((point) => point.startsWith(`${dir}/`));

  it("stops a write past diskLimitBytes with ENOSPC and keeps the host file within it", async () => {
    const reply = await ask("dd if=/dev/zero of=/workspace/big bs=1M count=100 2>&1; echo rc=$?");
    expect(reply).toContain("No space left on device");
    expect(reply).not.toContain("rc=0");
    const onHost = await stat(image());
    expect(onHost.blocks * 512).toBeLessThanOrEqual(DiskLimitBytes);
    expect(await mountsBelow(harness.home)).toEqual([bot.profileSlotDir()]);
  });

  it("runs the container under a memory ceiling and the default pids ceiling", async () => {
    const memory = await ask(
      "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
    );
    expect(memory.trim()).toBe(String(1024 * MiB));
    const pids = await ask(
      "cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max",
    );
    expect(pids.trim()).toBe("512");
  });

  it("/reset confirm removes the slot's disk: no mount, no loop device, no image", async () => {
    await ask("/reset");
    await ask("/reset confirm");
    expect(await mountsBelow(harness.home)).toEqual([]);
    const loops = execFileSync("losetup", ["-a"], { encoding: "utf8" });
    expect(loops).not.toContain(`${harness.home}/`);
    expect(await pathExists(image())).toBe(false);
    expect(await pathExists(bot.profileSlotDir())).toBe(false);
  });
});
