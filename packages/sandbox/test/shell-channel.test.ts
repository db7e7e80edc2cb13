import { execFileSync } from "node:child_process";
import {
  chownSync,
  mkdirSync,
  mkdtempSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDockerHost } from "../../../test-support/engine.js";
import { waitFor, waitUntil } from "../../../test-support/wait.js";
import { Defaults, type Sandbox, sessionHash } from "../src/index.js";
import { openChannel } from "../src/shell-channel.js";
import { StateDir } from "../src/shell-scripts.js";
import {
  docker,
  type Fixture,
  fixture,
  manualTimers,
  processesMatching,
  testShellChannel,
} from "./helpers.js";

/**
 * The session shell's channel (docs/sandbox.md, "How commands reach the shell"): in
 * per-session mode, beside a local engine, the controller reads its commands from and writes
 * its output to FIFOs in the session's private state directory, which the gateway opens on the
 * host; elsewhere it keeps the exec's stream.
 */

let fx: Fixture;
beforeAll(async () => {
  fx = await fixture();
});
afterAll(async () => {
  await fx.dispose();
});

/** What the session's shell has as its stdin, as `/proc/<pid>/fd/0` names it. */
async function shellInput(sandbox: Sandbox, slot: string, session: string): Promise<string> {
  // `$$` is the session's shell (the command is a function of its subshell).
  const result = await sandbox.run(slot, session, "readlink /proc/$$/fd/0");
  expect(result.exitCode).toBe(0);
  return result.stdout.trim();
}

const ViaFifo = /^\/run\/mediagate\/s\/[0-9a-f]+\/c[0-9a-f]+i \(deleted\)$/;
const ViaExec = /^pipe:\[\d+\]$/;

/**
 * Whether the shells of this run can have their channel: root beside the engine (its default
 * socket or a unix one), as the test command sets it up; elsewhere they keep the exec's stream.
 */
const channelReachable =
  process.getuid?.() === 0 && (testDockerHost() ?? "unix://").startsWith("unix://");

describe.skipIf(testShellChannel() === "exec" || !channelReachable)(
  "the channel of a per-session shell",
  () => {
    it("reads commands from a FIFO whose name is gone, and leaves no FIFO in the state dir", async () => {
      const sandbox = fx.sandbox();
      await sandbox.acquire("fifo");
      const input = await shellInput(sandbox, "fifo", "alice");
      expect(input).toMatch(ViaFifo);
      expect(input).toContain(`${StateDir}/${sessionHash("alice")}/`);
      const listed = await sandbox.run(
        "fifo",
        "alice",
        `ls -a ${StateDir}/${sessionHash("alice")}`,
      );
      expect(listed.stdout.split("\n").filter((name) => name.startsWith("c"))).toEqual([]);
      // Output, errors and the exit status come back apart, as on the exec's stream.
      const mixed = await sandbox.run("fifo", "alice", "echo out; echo err >&2; exit 7");
      expect(mixed).toMatchObject({ exitCode: 7, stdout: "out\n", stderr: "err\n" });
    });

    it("moves a warm container's shell to its FIFOs before its session is known", async () => {
      const sandbox = fx.sandbox(
        { persistent: false, orphanReaper: false, warmPool: 1 },
        { schedule: manualTimers().schedule },
      );
      await sandbox.warmUp();
      const [warm] = sandbox.warmContainers();
      // Its shell, made ahead (in the background), reads a FIFO already, in the directory of the
      // placeholder it claimed. Read from the host: root in the container may not look at the
      // descriptors of a process of another uid.
      const movedShells = async () => {
        const top = (await docker.getContainer(warm!).top({ ps_args: "-o pid,comm" })) as {
          Processes: string[][] | null;
        };
        const shells = (top.Processes ?? []).filter((row) => row[1] === "sh");
        const inputs = shells.map((row) => {
          try {
            return readlinkSync(`/proc/${row[0]}/fd/0`);
          } catch {
            return "";
          }
        });
        return inputs.filter((input) => /\/c[0-9a-f]+i \(deleted\)$/.test(input));
      };
      await waitUntil(async () => (await movedShells()).length === 1, "the shell made ahead moved");
      const { containerId } = await sandbox.acquire("session:fifo-warm");
      expect(containerId).toBe(warm);
      // The same FIFO, its directory renamed the session's.
      const input = await shellInput(sandbox, "session:fifo-warm", "ken");
      expect(input).toMatch(ViaFifo);
      expect(input).toContain(`${StateDir}/${sessionHash("ken")}/`);
      const mixed = await sandbox.run("session:fifo-warm", "ken", "echo out; echo err >&2; exit 7");
      expect(mixed).toMatchObject({ exitCode: 7, stdout: "out\n", stderr: "err\n" });
      await sandbox.shutdown();
    });

    it("carries a command and an output larger than a FIFO holds", async () => {
      const sandbox = fx.sandbox();
      await sandbox.acquire("fifo-big");
      // 300,000 bytes of script and 1 MB of output: each passes the 64 KiB of a FIFO in parts.
      const word = "x".repeat(299_980);
      const result = await sandbox.run(
        "fifo-big",
        "bob",
        `w='${word}'; echo \${#w}; head -c 1000000 /dev/zero | tr '\\0' y`,
        { maxOutputBytes: 2_000_000 },
      );
      expect(result.exitCode).toBe(0);
      expect(result.stdout.startsWith("299980\n")).toBe(true);
      expect(result.stdout.length).toBe(7 + 1_000_000);
    });

    it("ends the shell when the gateway lets it go", async () => {
      let ms = Date.now();
      const sandbox = fx.sandbox({ maxOpenShells: 1 }, { now: () => ms });
      const { containerId } = await sandbox.acquire("fifo-close");
      expect(await shellInput(sandbox, "fifo-close", "carol")).toMatch(ViaFifo);
      const first = (await sandbox.run("fifo-close", "carol", "echo $$")).stdout.trim();
      // One open shell per container here: a second session's closes carol's, unused for
      // shellKeepMs. The gateway closes its ends of the FIFOs; the shell reads its end.
      ms += Defaults.shellKeepMs;
      await sandbox.run("fifo-close", "dave", "true");
      await waitUntil(async () => {
        const ps = await processesMatching(containerId, "sh");
        return !ps.some((line) => line.trim().startsWith(`${first} `));
      }, "carol's shell gone");
    });

    it("keeps a job's output read after its shell was closed or killed, so the job runs on", async () => {
      let ms = Date.now();
      const sandbox = fx.sandbox({ maxOpenShells: 1 }, { now: () => ms });
      const { containerId } = await sandbox.acquire("fifo-job");
      const running = async (tag: string) => (await processesMatching(containerId, tag)).length;
      // A job printing to the shell's output; its shell is closed for another session's.
      await sandbox.run("fifo-job", "heidi", "(while :; do echo tick; sleep 0.21; done) & echo ok");
      ms += Defaults.shellKeepMs;
      await sandbox.run("fifo-job", "ivan", "true");
      // And one whose shell a command killed (the cap's only shell is ivan's: the next one
      // closes it).
      ms += Defaults.shellKeepMs;
      await sandbox.run("fifo-job", "judy", "(while :; do echo tock; sleep 0.22; done) & echo ok");
      expect((await sandbox.run("fifo-job", "judy", "kill -9 $$")).exitCode).toBe(137);
      // Each has printed several times since: a job whose output nobody reads any more dies of
      // SIGPIPE at its next line.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      // A look can fall between two of a job's sleeps (its echo, the next fork: longer on a
      // loaded machine); a job that runs on shows its sleep again within a few rounds, and
      // one that died never does.
      await waitFor(async () => expect(await running("sleep 0.21")).toBe(1), 3_000);
      await waitFor(async () => expect(await running("sleep 0.22")).toBe(1), 3_000);
      // What it prints now goes to its old shell's output, read and dropped: a new shell of the
      // session has its own.
      expect((await sandbox.run("fifo-job", "judy", "sleep 0.5; echo done")).stdout).toBe("done\n");
      await sandbox.killSession("heidi");
      await sandbox.killSession("judy");
    });

    it("keeps working for a session that swaps its channel's FIFOs for links as they are made", async () => {
      const sandbox = fx.sandbox();
      await sandbox.acquire("fifo-swap");
      const dir = `${StateDir}/${sessionHash("eve")}`;
      await sandbox.run(
        "fifo-swap",
        "eve",
        // A job of the session's own uid, watching its state dir: each FIFO a new shell makes
        // becomes a link to the host's /etc/passwd before the gateway opens it.
        `(while :; do for f in ${dir}/c*; do [ -p "$f" ] && rm -f "$f" && ln -s /etc/passwd "$f"; done; done) >/dev/null 2>&1 & echo started`,
      );
      // Its shell ends; the next command opens a new one, whose FIFOs the job swaps.
      const killed = await sandbox.run("fifo-swap", "eve", "kill -9 $$");
      expect(killed.exitCode).toBe(137);
      for (let i = 0; i < 3; i++) {
        const result = await sandbox.run("fifo-swap", "eve", `echo round ${i}`);
        expect(result).toMatchObject({ exitCode: 0, stdout: `round ${i}\n` });
      }
      await sandbox.killSession("eve");
    });
  },
);

describe("a shell that keeps the exec's stream", () => {
  it("in root mode", async () => {
    const sandbox = fx.sandbox({ user: "root" });
    await sandbox.acquire("fifo-root");
    expect(await shellInput(sandbox, "fifo-root", "frank")).toMatch(ViaExec);
  });

  it("with shellChannel: exec", async () => {
    const sandbox = fx.sandbox({ shellChannel: "exec" });
    await sandbox.acquire("fifo-off");
    expect(await shellInput(sandbox, "fifo-off", "grace")).toMatch(ViaExec);
  });
});

// Its FIFOs are made for another uid: chown needs root.
describe.skipIf(process.getuid?.() !== 0)("openChannel", () => {
  const uid = 424_242;
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "mg-channel-"));
    mkdirSync(join(dir, "s"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const fifos = (name: string) => ({
    input: `/run/mediagate/s/${name}i`,
    output: `/run/mediagate/s/${name}o`,
    errors: `/run/mediagate/s/${name}e`,
  });
  const make = (name: string, owner = uid) => {
    for (const end of ["i", "o", "e"]) {
      const path = join(dir, "s", `${name}${end}`);
      execFileSync("mkfifo", ["-m", "0600", path]);
      chownSync(path, owner, owner);
    }
  };

  it("opens three FIFOs of the session's uid", async () => {
    make("good");
    const channel = await openChannel(dir, fifos("good"), uid);
    channel.input.write("hello\n");
    channel.input.destroy();
    channel.output.destroy();
    channel.errors.destroy();
  });

  it("refuses a link, even to a FIFO of the session's uid, a regular file and another uid's FIFO", async () => {
    make("target");
    make("link");
    rmSync(join(dir, "s", "linko"));
    symlinkSync(join(dir, "s", "targeto"), join(dir, "s", "linko"));
    await expect(openChannel(dir, fifos("link"), uid)).rejects.toMatchObject({ code: "ELOOP" });
    make("file");
    rmSync(join(dir, "s", "filee"));
    writeFileSync(join(dir, "s", "filee"), "");
    chownSync(join(dir, "s", "filee"), uid, uid);
    await expect(openChannel(dir, fifos("file"), uid)).rejects.toThrow(/is not a FIFO of uid/);
    make("other", uid + 1);
    await expect(openChannel(dir, fifos("other"), uid)).rejects.toThrow(/is not a FIFO of uid/);
    await expect(openChannel(dir, fifos("none"), uid)).rejects.toMatchObject({ code: "ENOENT" });
  });
});
