import type { ReadyMedia } from "@mediagate/media";
import { describe, expect, it } from "vitest";
import { DiscordIdempotence } from "../channels/discord/deliver-reply.js";
import type { AmbiguousSends } from "../channels/telegram/errors.js";
import type { DeliveryOutcome, StepResult } from "../channels/types.js";
import { earlierOutcome, type Idempotence, sendsAgain } from "./earlier-outcome.js";

const item = { path: "/workspace/out/a: b ü.png", kind: "photo" } as ReadyMedia;

/** What a resumed delivery makes of a file's step: send it (again), or this outcome. */
type Answer = "send" | DeliveryOutcome;

const delivered: Answer = { status: "delivered", path: item.path, kind: "photo" };
const unconfirmed: Answer = { status: "unconfirmed", path: item.path };
const failed: Answer = {
  status: "upload_failed",
  path: item.path,
  error: "not delivered by an earlier attempt",
};

type Platform = "discord" | "telegram, at-most-once" | "telegram, at-least-once";

/** Every recorded state (and none), per platform; a missing one fails to compile. */
const Answers: Record<Platform, Record<StepResult | "unrecorded", Answer>> = {
  // Discord resends a cut-off step: its nonce makes Discord return the first message.
  discord: { unrecorded: "send", sent: delivered, unconfirmed, failed, sending: "send" },
  // Telegram cannot tell a repeat: under at-most-once a cut-off step may be in the chat.
  "telegram, at-most-once": {
    unrecorded: "send",
    sent: delivered,
    unconfirmed,
    failed,
    sending: unconfirmed,
  },
  "telegram, at-least-once": {
    unrecorded: "send",
    sent: delivered,
    unconfirmed,
    failed,
    sending: "send",
  },
};

const Idempotences: Record<Platform, Idempotence> = {
  discord: DiscordIdempotence,
  // Telegram's is the operator's delivery.ambiguousSends, as it is.
  "telegram, at-most-once": "at-most-once" satisfies AmbiguousSends,
  "telegram, at-least-once": "at-least-once" satisfies AmbiguousSends,
};

const rows = Object.entries(Answers).flatMap(([platform, answers]) =>
  Object.entries(answers).map(([state, answer]) => ({
    platform: platform as Platform,
    state: state as StepResult | "unrecorded",
    answer,
  })),
);

describe("earlierOutcome", () => {
  it.each(rows)("$platform: a file recorded $state", ({ platform, state, answer }) => {
    const idempotence = Idempotences[platform];
    const result = state === "unrecorded" ? undefined : state;
    const outcome = earlierOutcome(item, result, idempotence);
    expect(outcome ?? "send").toEqual(answer);
    // The text's steps follow the same rule: sent (again) exactly when the file would be.
    expect(sendsAgain(result, idempotence)).toBe(answer === "send");
  });

  it("covers every platform and every recorded state", () => {
    expect(rows).toHaveLength(3 * 5);
    expect(new Set(Object.values(Idempotences))).toEqual(
      new Set(["idempotent", "at-most-once", "at-least-once"]),
    );
  });
});
