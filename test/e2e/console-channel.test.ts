import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { ConsoleChannel, Gateway, resolveConfig } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testEnv, waitUntil } from "./harness/gateway-home.js";

describe("console channel against the real Docker engine", () => {
  const profile = `e2e-console-${randomBytes(4).toString("hex")}`;
  const input = new PassThrough();
  const output = new PassThrough();
  let printed = "";
  let home = "";
  let gateway: Gateway | undefined;

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), "mediagate-console-"));
    output.on("data", (chunk: Buffer) => {
      printed += chunk.toString();
    });
    // No allowedUsers at all: the console's local user is allowed and admin by construction.
    const config = resolveConfig(
      {
        home,
        profiles: [
          { name: profile, sandbox: { image: "mediagate-sandbox:test", diskLimitBytes: 0 } },
        ],
      },
      { env: testEnv(home) },
    );
    const consoleChannel = new ConsoleChannel({
      profile,
      home: config.profiles[0]!.home,
      input,
      output,
    });
    gateway = await Gateway.create(config, { channels: [consoleChannel] });
    await gateway.start();
  });

  afterAll(async () => {
    if (gateway !== undefined) {
      await gateway.stop();
      for (const runtime of gateway.runtimes.values()) {
        for (const c of await runtime.sandbox.list()) await runtime.sandbox.remove(c.id);
      }
    }
    await rm(home, { recursive: true, force: true });
  });

  /** Types a line and waits until the gateway printed something matching `until`. */
  async function type(line: string, until: RegExp): Promise<string> {
    const from = printed.length;
    input.write(`${line}\n`);
    await waitUntil(() => until.test(printed.slice(from)), `output matching ${until}`);
    await gateway!.idle();
    return printed.slice(from);
  }

  it("prints the output of a command typed at the prompt", async () => {
    const out = await type("echo hello", /hello\n/);
    expect(out).toMatch(/^hello\n/m);
  });

  it("copies a MEDIA file to <home>/outbox and shows kind, size and path", async () => {
    const out = await type(
      "printf abc > /workspace/g.txt; echo MEDIA:/workspace/g.txt",
      /\[document, 3 bytes, .*\]/,
    );
    const match = /\[document, 3 bytes, (.*)\]/.exec(out);
    const path = match?.[1] ?? "";
    expect(path.startsWith(join(home, "profiles", profile, "outbox"))).toBe(true);
    expect(path).toMatch(/-g\.txt$/);
    expect(await readFile(path, "utf8")).toBe("abc");
  });

  it("treats the local user as admin: /status answers with the session and container", async () => {
    const out = await type("/status", /Queued messages: \d+/);
    expect(out).toContain(`Session: agent:${profile}:console:dm:local`);
    expect(out).toMatch(/Container: [0-9a-f]{12} \(running\)/);
  });

  it("answers /start and /help itself, listing the admin commands for the local user", async () => {
    for (const command of ["/start", "/help"]) {
      const out = await type(command, /\/reset — /);
      expect(out).toContain(`profile "${profile}" (shell agent)`);
      expect(out).toContain("Commands (you are an admin):");
      for (const admin of ["/status — ", "/stop — ", "/stop all — ", "/reset — "]) {
        expect(out).toContain(`  ${admin}`);
      }
      // The gateway answered, not the shell (which knows no /start).
      expect(out).not.toContain("not found");
    }
  });
});
