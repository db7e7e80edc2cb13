import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { manualClock } from "../../../../test-support/clock.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { waitUntil } from "../../../../test-support/wait.js";
import type { ChannelAdapter, ChatTarget } from "../channels/types.js";
import { parseChoiceData } from "../choices/choice-data.js";
import { emptyEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import type { ApprovalSettings } from "../config/types.js";
import { silentLogger } from "../log.js";
import { SqliteStateStore } from "../state/store.js";
import { ApprovalBroker, type ApprovalProfile } from "./broker.js";

const stores: SqliteStateStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});

const Settings: ApprovalSettings = { ask: "always", approvers: "sender", expiresSeconds: 600 };

/** A channel whose buttons are recorded: each post answers the next message id. */
function recordingChannel() {
  const posted: { target: ChatTarget; data: string[] }[] = [];
  const closed: [string, string][] = [];
  const channel = {
    platform: "telegram",
    choices: {
      post: async (target: ChatTarget, _text: string, rows: { data: string }[][]) => {
        posted.push({ target, data: rows.flat().map((button) => button.data) });
        return String(posted.length);
      },
      close: async (_target: ChatTarget, messageId: string, text: string) => {
        closed.push([messageId, text]);
      },
    },
  } as unknown as ChannelAdapter;
  return { channel, posted, closed };
}

async function profileWithStore(): Promise<ApprovalProfile> {
  const [profile] = resolveConfig(
    {
      profiles: [{ name: "p", admins: ["telegram:1"], allowedUsers: ["telegram:2", "telegram:3"] }],
    },
    { env: emptyEnv("/home/u") },
  ).profiles;
  const store = await SqliteStateStore.open(join(await tempDirForTest("mg-appr-"), "state.db"));
  stores.push(store);
  return { profile: profile!, store };
}

function request(channel: ChannelAdapter, userId: string, command: string, signal: AbortSignal) {
  return {
    profile: "p",
    channel,
    target: { platform: "telegram", chatId: "-100" } as const,
    sessionKey: "telegram:-100",
    sessionId: "s1",
    platform: "telegram" as const,
    userId,
    settings: Settings,
    action: { kind: "command", command } as const,
    reason: "always",
    signal,
    log: silentLogger(),
  };
}

/**
 * Two processes of one profile on one store (two replicas, or a press that reached a process
 * other than the one whose turn waits): `waiting` asks; `other` is where answers arrive. With
 * `alive`, they are replicas: the waiter reads its record every second, and `other` finds it
 * alive while `alive()` says so.
 */
async function twoProcesses(alive?: () => boolean) {
  const shared = await profileWithStore();
  const clock = manualClock();
  const waiting = new ApprovalBroker({
    profileOf: () => shared,
    logger: silentLogger(),
    schedule: clock.schedule,
    ...(alive === undefined ? {} : { waiter: "h/boot/1/1", watchMs: 1_000 }),
  });
  const other = new ApprovalBroker({
    profileOf: () => shared,
    logger: silentLogger(),
    ...(alive === undefined
      ? {}
      : {
          waiter: "l/boot/1/1",
          waitsElsewhere: async (_profile: string, record: { waiter: string }) =>
            alive() && record.waiter === "h/boot/1/1",
        }),
  });
  const asked = recordingChannel();
  const asking = waiting.ask(
    request(asked.channel, "2", "rm -rf build", new AbortController().signal),
  );
  const settled = asking.then(
    (answer) => answer,
    (error: unknown) => (error instanceof Error ? error.message : String(error)),
  );
  await waitUntil(() => asked.posted.length === 1, "the question posted");
  return { clock, waiting, other, asked, settled };
}

const press = { profile: "p", platform: "telegram", chatId: "-100", messageId: "1" } as const;

describe("a question another gateway process decided", () => {
  it("ends the turn that waits for it at its expiry at the latest, instead of never", async () => {
    const { clock, waiting, other, asked, settled } = await twoProcesses();
    const allowOnce = asked.posted[0]!.data[0]!;
    const answer = await other.onPress(
      { ...press, userId: "2", data: allowOnce },
      parseChoiceData(allowOnce)!,
    );
    expect(answer.kind).toBe("decided");
    clock.advance(Settings.expiresSeconds * 1000);
    expect(await settled).toMatch(/another gateway process.*not run/);
    expect(waiting.waiting).toBe(0);
  });
});

describe("a question another live process waits for (replicas)", () => {
  it("records a press for the waiting process, whose turn goes on with it at its next look", async () => {
    const { clock, waiting, other, asked, settled } = await twoProcesses(() => true);
    const allowOnce = asked.posted[0]!.data[0]!;
    const answer = await other.onPress(
      { ...press, userId: "2", data: allowOnce },
      parseChoiceData(allowOnce)!,
    );
    expect(answer).toMatchObject({ kind: "decided", notice: expect.stringMatching(/^✅ Allowed/) });
    clock.advance(1_000);
    expect(await settled).toBe("once");
    expect(waiting.waiting).toBe(0);
    // The press's answer edited the message: the waiting process does not edit it again.
    expect(asked.closed).toEqual([]);
  });

  it("records a typed /deny for it, and closes the question's buttons through the chat's channel", async () => {
    const { clock, other, asked, settled } = await twoProcesses(() => true);
    const typedIn = recordingChannel();
    const line = await other.typed(
      "p",
      { platform: "telegram", chatId: "-100" },
      { userId: "2", userName: "Ann", status: "denied" },
      typedIn.channel,
    );
    expect(line).toMatch(/^🚫 Denied by Ann/);
    expect(typedIn.closed).toEqual([["1", expect.stringMatching(/^🚫 Denied by Ann/)]]);
    clock.advance(1_000);
    expect(await settled).toMatch(/Ann denied it; it was not run/);
    expect(asked.closed).toEqual([]);
  });

  it("closes a question whose waiter no longer holds its session as interrupted, as after a restart", async () => {
    const { clock, other, asked, settled } = await twoProcesses(() => false);
    const allowOnce = asked.posted[0]!.data[0]!;
    const answer = await other.onPress(
      { ...press, userId: "2", data: allowOnce },
      parseChoiceData(allowOnce)!,
    );
    expect(answer).toMatchObject({ kind: "decided", notice: expect.stringMatching(/^⚠️ Not run/) });
    clock.advance(1_000);
    expect(await settled).toMatch(/another gateway process.*not run/);
  });
});

describe("a typed answer", () => {
  it("decides no question asked after it was sent: it was meant for an earlier one", async () => {
    const shared = await profileWithStore();
    const broker = new ApprovalBroker({ profileOf: () => shared, logger: silentLogger() });
    const asked = recordingChannel();
    const settled = broker.ask(
      request(asked.channel, "2", "rm -rf build", new AbortController().signal),
    );
    await waitUntil(() => asked.posted.length === 1, "the question posted");
    const question = await shared.store.latestPendingApproval("telegram", "-100", undefined);
    const where = { platform: "telegram", chatId: "-100" } as const;
    // Sent five seconds before this question was asked: the /allow answered another one.
    const early = await broker.typed("p", where, {
      userId: "2",
      status: "allowed",
      sentAtMs: question!.createdMs - 5_000,
    });
    expect(early).toMatch(/^⚠️ Not decided: your \/allow was sent before the question/);
    expect(early).toContain("$ rm -rf build");
    expect(await shared.store.latestPendingApproval("telegram", "-100", undefined)).toMatchObject({
      id: question!.id,
      status: "pending",
    });
    // Within a second or two of it (Telegram's whole-second dates, clocks apart): decided.
    const line = await broker.typed("p", where, {
      userId: "2",
      userName: "Ann",
      status: "allowed",
      sentAtMs: question!.createdMs - 1_500,
    });
    expect(line).toMatch(/^✅ Allowed once by Ann/);
    expect(await settled).toBe("once");
  });
});
