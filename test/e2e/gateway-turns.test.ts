import { randomBytes, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ChannelAdapter,
  type ChannelHealth,
  type ChannelStartOptions,
  type ChatTarget,
  type DeliveryReport,
  Gateway,
  type GatewayConfig,
  type InboundMessage,
  type OutboundReply,
  resolveConfig,
} from "@mediagate/gateway";
import type { UploadLimits } from "@mediagate/media";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testEnv, waitUntil } from "./harness/gateway-home.js";

/** What a recording channel was asked to send, in order. */
type Sent =
  | { readonly kind: "text"; readonly text: string }
  | {
      readonly kind: "reply";
      readonly sessionKey: string;
      readonly profile: string;
      readonly text: string;
      readonly files: {
        readonly filename: string;
        readonly kind: string;
        readonly bytes: Buffer;
      }[];
    };

/**
 * A minimal ChannelAdapter (the gateway's own interface, not a mocked library) that injects
 * messages as Telegram users and records every text and reply; file bytes are read from the
 * plan's open descriptors at delivery time, as a real adapter would upload them.
 */
class RecordingChannel implements ChannelAdapter {
  readonly platform = "telegram" as const;
  readonly limits: UploadLimits = { maxBytes: () => 50 * 1024 * 1024 };
  readonly sent: Sent[] = [];
  #onMessage: ((message: InboundMessage) => Promise<void>) | undefined;
  #counter = 0;

  constructor(readonly profile: string) {}

  async start({ onMessage }: ChannelStartOptions): Promise<void> {
    this.#onMessage = onMessage;
  }
  async stop(): Promise<void> {
    this.#onMessage = undefined;
  }
  async sendText(_target: ChatTarget, text: string): Promise<void> {
    this.sent.push({ kind: "text", text });
  }
  async deliver(reply: OutboundReply): Promise<DeliveryReport> {
    const files = [];
    for (const media of reply.plan.ready()) {
      files.push({ filename: media.filename, kind: media.kind, bytes: await media.file.read() });
    }
    this.sent.push({
      kind: "reply",
      sessionKey: reply.sessionKey,
      profile: reply.profile,
      text: reply.text,
      files,
    });
    return {
      outcomes: reply.plan
        .ready()
        .map((m) => ({ status: "delivered", path: m.path, kind: m.kind })),
    };
  }
  async showActivity(): Promise<void> {}
  health(): ChannelHealth {
    return { platform: this.platform, profile: this.profile, state: "up", sinceMs: 0 };
  }

  /** Sends `text` as telegram user `userId` in a DM. */
  send(text: string, userId = "1"): void {
    if (this.#onMessage === undefined) throw new Error("channel not started");
    this.#counter++;
    this.#onMessage({
      profile: this.profile,
      platform: "telegram",
      chatId: userId,
      chatType: "dm",
      userId,
      messageId: String(this.#counter),
      text,
      receiptId: randomUUID(),
    });
  }

  /** Texts and reply texts sent after index `from`. */
  textsSince(from: number): string[] {
    return this.sent.slice(from).map((s) => s.text);
  }
}

/** A unique profile name and a temp MEDIAGATE home for one test file. */
async function testHome(prefix: string): Promise<{ profile: string; home: string }> {
  const profile = `${prefix}-${randomBytes(4).toString("hex")}`;
  const home = await mkdtemp(join(tmpdir(), `mediagate-${prefix}-`));
  return { profile, home };
}

/** Config for one profile on the test image; telegram:1 is admin, telegram:2 only allowed. */
function testConfig(
  home: string,
  profile: string,
  sandbox: Record<string, unknown> = {},
): GatewayConfig {
  return resolveConfig(
    {
      home,
      profiles: [
        {
          name: profile,
          allowedUsers: ["telegram:1", "telegram:2"],
          admins: ["telegram:1"],
          sandbox: { image: "mediagate-sandbox:test", diskLimitBytes: 0, ...sandbox },
        },
      ],
    },
    { env: testEnv(home) },
  );
}

/** Stops the gateway, removes every container of its profiles, and deletes the home. */
async function teardown(gateway: Gateway | undefined, home: string): Promise<void> {
  if (gateway !== undefined) {
    await gateway.stop();
    for (const runtime of gateway.runtimes.values()) {
      for (const c of await runtime.sandbox.list()) await runtime.sandbox.remove(c.id);
    }
  }
  await rm(home, { recursive: true, force: true });
}

describe("gateway turns against the real Docker engine", () => {
  let gateway: Gateway | undefined;
  let channel: RecordingChannel;
  let home = "";
  let profile = "";

  beforeAll(async () => {
    ({ profile, home } = await testHome("e2e-turns"));
    channel = new RecordingChannel(profile);
    gateway = await Gateway.create(testConfig(home, profile), { channels: [channel] });
    await gateway.start();
  });

  afterAll(async () => {
    await teardown(gateway, home);
  });

  const runtime = () => gateway!.runtimes.get(profile)!;
  const slot = () => runtime().slotFor(`agent:${profile}:telegram:dm:1`);

  it("answers `echo hello` with hello, keyed to the sender's session", async () => {
    const from = channel.sent.length;
    channel.send("echo hello");
    await gateway!.idle();
    const [reply] = channel.sent.slice(from);
    expect(reply).toMatchObject({
      kind: "reply",
      text: "hello",
      profile,
      sessionKey: `agent:${profile}:telegram:dm:1`,
    });
  });

  it("delivers a file the command tagged with MEDIA:, with its bytes", async () => {
    const from = channel.sent.length;
    channel.send("printf x > /workspace/f.txt; echo MEDIA:/workspace/f.txt");
    await gateway!.idle();
    const replies = channel.sent.slice(from).filter((s) => s.kind === "reply");
    expect(replies).toHaveLength(1);
    const reply = replies[0]!;
    if (reply.kind !== "reply") throw new Error("unreachable");
    expect(reply.files.map((f) => [f.filename, f.bytes.toString()])).toEqual([["f.txt", "x"]]);
    expect(reply.text).not.toContain("MEDIA:");
  });

  it("copies a file that is on no mount out of the live container", async () => {
    const from = channel.sent.length;
    channel.send("printf fallback > /tmp/t.txt; echo MEDIA:/tmp/t.txt");
    await gateway!.idle();
    const reply = channel.sent.slice(from).find((s) => s.kind === "reply");
    if (reply?.kind !== "reply") throw new Error("no reply");
    expect(reply.files.map((f) => [f.filename, f.bytes.toString()])).toEqual([
      ["t.txt", "fallback"],
    ]);
  });

  it("withholds a credential-surface file and says so without echoing the path", async () => {
    const from = channel.sent.length;
    channel.send("echo MEDIA:/etc/passwd; echo MEDIA:/workspace/nothing-here.txt");
    await gateway!.idle();
    const sent = channel.sent.slice(from);
    // The reply, then the outbox's notice: a message of its own, delivered like a reply.
    const [reply, ...rest] = sent;
    if (reply?.kind !== "reply") throw new Error("no reply");
    expect(reply.files).toEqual([]);
    const notices = rest.map((s) => s.text);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain("An attachment was withheld");
    expect(notices[0]).toContain("Couldn't deliver nothing-here.txt");
    expect(notices[0]).not.toContain("/etc/passwd");
  });

  it("/stop from an admin kills a running `sleep 1000` and reports it", async () => {
    const sandbox = runtime().sandbox;
    const sleeping = async () => {
      const ps = await sandbox.exec(slot(), ["ps", "-o", "args"]);
      return ps.stdout.split("\n").some((line) => line.trim() === "sleep 1000");
    };
    channel.send("sleep 1000");
    await waitUntil(sleeping, "the sleep running");
    const from = channel.sent.length;
    channel.send("/stop");
    await gateway!.idle();
    const texts = channel.textsSince(from);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatch(/^🛑 Stopped: aborted the running turn/);
    expect(await sleeping()).toBe(false);
  });

  it("/reset from a non-admin is refused and the container stays", async () => {
    const before = await runtime().sandbox.status(slot());
    expect(before?.state).toBe("running");
    const from = channel.sent.length;
    channel.send("/reset confirm", "2");
    await gateway!.idle();
    expect(channel.textsSince(from)).toEqual(["⛔ /reset is for admins only; nothing was done."]);
    expect(await runtime().sandbox.status(slot())).toEqual(before);
  });

  it("/reset from an admin asks to confirm, then removes the container and its dirs; the next message gets a new one", async () => {
    const before = await runtime().sandbox.status(slot());
    const dir = runtime().sandbox.slotDirectory(slot());
    expect(existsSync(dir)).toBe(true);
    let from = channel.sent.length;
    channel.send("/reset");
    await gateway!.idle();
    expect(channel.textsSince(from)[0]).toContain("Send /reset confirm");
    expect(await runtime().sandbox.status(slot())).toEqual(before);

    from = channel.sent.length;
    channel.send("/reset confirm");
    await gateway!.idle();
    expect(channel.textsSince(from)[0]).toMatch(
      /^♻️ Reset: new conversation started, removed the container/,
    );
    const gone = await runtime().sandbox.status(slot());
    expect(gone === undefined || gone.state === "missing").toBe(true);
    expect(existsSync(dir)).toBe(false);

    from = channel.sent.length;
    channel.send("ls /workspace; echo done");
    await gateway!.idle();
    expect(channel.textsSince(from)).toEqual(["done"]);
    const after = await runtime().sandbox.status(slot());
    expect(after?.state).toBe("running");
    expect(after?.containerId).not.toBe(before?.containerId);
  });
});

describe("gateway with a non-persistent sandbox", () => {
  let gateway: Gateway | undefined;
  let channel: RecordingChannel;
  let home = "";
  let profile = "";

  beforeAll(async () => {
    ({ profile, home } = await testHome("e2e-ephemeral"));
    channel = new RecordingChannel(profile);
    gateway = await Gateway.create(testConfig(home, profile, { persistent: false }), {
      channels: [channel],
    });
    await gateway.start();
  });

  afterAll(async () => {
    await teardown(gateway, home);
  });

  it("/stop removes the session's own container and dirs; /reset needs no confirmation", async () => {
    const runtime = gateway!.runtimes.get(profile)!;
    const slot = runtime.slotFor(`agent:${profile}:telegram:dm:1`);
    expect(slot).toBe(`session:agent:${profile}:telegram:dm:1`);
    channel.send("echo warm > /workspace/w.txt; echo ok");
    await gateway!.idle();
    expect((await runtime.sandbox.status(slot))?.state).toBe("running");
    let from = channel.sent.length;
    channel.send("/stop");
    await gateway!.idle();
    expect(channel.textsSince(from)[0]).toContain("removed the session's container");
    const after = await runtime.sandbox.status(slot);
    expect(after === undefined || after.state === "missing").toBe(true);
    expect(existsSync(runtime.sandbox.slotDirectory(slot))).toBe(false);

    from = channel.sent.length;
    channel.send("/reset");
    await gateway!.idle();
    expect(channel.textsSince(from)[0]).toMatch(/^♻️ Reset: new conversation started/);
  });
});
