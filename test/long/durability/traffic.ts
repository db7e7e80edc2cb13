import type { FakeTelegram } from "../../fakes/telegram/index.js";
import type { SeededRandom } from "./prng.js";

/**
 * What a message asks the shell agent (the message text is run as a command, the output is
 * the reply): `quick` echoes its token, `long` sleeps first, `media` also writes a file and
 * names it in a `MEDIA:` line, so the reply is the token (as the file's caption) plus the file.
 */
export type MessageKind = "quick" | "long" | "media";

/** Where a message is written: the user's private chat, or a group (one session per member). */
export type ChatPlace =
  | { readonly type: "dm" }
  | { readonly type: "group"; readonly chatId: number };

/** One message a simulated user will send. */
export interface PlannedMessage {
  /** `u<user>#<n>`, n counting the user's messages from 1. */
  readonly id: string;
  readonly userId: number;
  readonly place: ChatPlace;
  readonly kind: MessageKind;
  /** The one line the right reply holds, unique in the run (e.g. `ok-u701-n007`). */
  readonly token: string;
  /** The command sent as the message text. */
  readonly text: string;
  /** For `media`: the file the command writes under /workspace, and its content. */
  readonly file?: { readonly name: string; readonly content: string };
}

/** A planned message once it is queued at the fake (Telegram has it). */
export interface SentMessage extends PlannedMessage {
  readonly chatId: number;
  readonly updateId: number;
  /** The Telegram message id; replies and notices refer to it (`reply_parameters`). */
  readonly messageId: number;
  readonly sentAtMs: number;
}

/** Options of {@link planTraffic}. */
export interface TrafficPlan {
  readonly users: readonly number[];
  readonly messages: number;
  /** Share of `long` messages (0–1). */
  readonly longShare: number;
  /** Share of `media` messages (0–1). */
  readonly mediaShare: number;
  /** Seconds a `long` message sleeps. */
  readonly longSeconds: number;
  /**
   * When set, a user's messages move on to a new conversation every this many messages: the
   * first conversation is the private chat, the next ones groups (each its own session), so
   * earlier sessions are left behind the way real chats go quiet.
   */
  readonly conversationLength?: number;
}

function placeOf(plan: TrafficPlan, userId: number, index: number): ChatPlace {
  if (plan.conversationLength === undefined) return { type: "dm" };
  const conversation = Math.floor(index / plan.conversationLength);
  if (conversation === 0) return { type: "dm" };
  return { type: "group", chatId: -(1_000_000_000 + userId * 100 + conversation) };
}

/**
 * The messages of a run, in sending order: `messages` spread evenly over the users (in a random
 * order), each `quick`, `long` or `media` by the given shares.
 */
export function planTraffic(random: SeededRandom, plan: TrafficPlan): PlannedMessage[] {
  const owners = Array.from({ length: plan.messages }, (_, i) => {
    const owner = plan.users[i % plan.users.length];
    if (owner === undefined) throw new Error("planTraffic needs at least one user");
    return owner;
  });
  const counts = new Map<number, number>();
  return random.shuffle(owners).map((userId) => {
    const index = counts.get(userId) ?? 0;
    counts.set(userId, index + 1);
    const n = String(index + 1).padStart(3, "0");
    const token = `ok-u${userId}-n${n}`;
    const roll = random.next();
    const kind: MessageKind =
      roll < plan.mediaShare ? "media" : roll < plan.mediaShare + plan.longShare ? "long" : "quick";
    const base = {
      id: `u${userId}#${n}`,
      userId,
      place: placeOf(plan, userId, index),
      kind,
      token,
    };
    if (kind === "quick") return { ...base, text: `echo ${token}` };
    if (kind === "long") return { ...base, text: `sleep ${plan.longSeconds}; echo ${token}` };
    const file = { name: `f-u${userId}-n${n}.txt`, content: `file of ${token}` };
    return {
      ...base,
      file,
      text: `printf '${file.content}' > /workspace/${file.name}; echo ${token}; echo MEDIA:/workspace/${file.name}`,
    };
  });
}

/** Queues `message` at the fake as its user writing it (Telegram keeps it until confirmed). */
export function sendMessage(fake: FakeTelegram, message: PlannedMessage): SentMessage {
  const sender = { userId: message.userId, firstName: `User ${message.userId}` };
  const update =
    message.place.type === "dm"
      ? fake.sendPrivateText({ ...sender, text: message.text })
      : fake.sendGroupText({ ...sender, chatId: message.place.chatId, text: message.text });
  const inbound = update.message;
  if (inbound === undefined) throw new Error("the fake made an update without a message");
  return {
    ...message,
    chatId: inbound.chat.id,
    updateId: update.update_id,
    messageId: inbound.message_id,
    sentAtMs: Date.now(),
  };
}

/**
 * The session key the gateway gives the message (docs/sessions.md, default keying: a private
 * chat is one session, a group one session per member).
 */
export function sessionKeyOf(profile: string, message: SentMessage): string {
  return message.place.type === "dm"
    ? `agent:${profile}:telegram:dm:${message.chatId}`
    : `agent:${profile}:telegram:group:${message.chatId}:user:${message.userId}`;
}

/** A one-off message of `userId` (in their private chat unless `place` says otherwise). */
export function commandMessage(
  userId: number,
  token: string,
  text: string,
  options: { kind?: MessageKind; file?: PlannedMessage["file"]; place?: ChatPlace } = {},
): PlannedMessage {
  return {
    id: token,
    userId,
    place: options.place ?? { type: "dm" },
    kind: options.kind ?? "quick",
    token,
    text,
    ...(options.file === undefined ? {} : { file: options.file }),
  };
}
