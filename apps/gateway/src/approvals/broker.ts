import { type Schedule, scheduleWithTimer } from "@mediagate/io";
import { accessOf } from "../access-control/access.js";
import { ToolRefusedError } from "../agents/tool-refused.js";
import type {
  ChannelAdapter,
  ChatTarget,
  ChoiceAnswer,
  ChoiceButton,
  ChoicePress,
  Platform,
} from "../channels/types.js";
import { choiceId, formatChoiceData } from "../choices/choice-data.js";
import { type ChoiceHandler, UnknownChoiceText } from "../choices/router.js";
import type { ApprovalSettings, ProfileConfig } from "../config/types.js";
import { Defaults } from "../defaults.js";
import type { Logger } from "../log.js";
import { abortedByStop } from "../session/stopping.js";
import type { ApprovalRecord, ApprovalStatus } from "../state/approvals.js";
import type { StateStore } from "../state/state-store.js";
import { type AgentAction, describeAction } from "./rules.js";
import { decidedText, questionText, refusalOf, sentBeforeText, TypedHint } from "./texts.js";

/** The button kind of approvals in choice data (`ap:<id>:<option>`). */
export const ApprovalChoiceKind = "ap";

/** The buttons' options: Allow once, Allow for this session, Deny. */
const Options = { once: "allowed", session: "allowed_session", deny: "denied" } as const;
type OptionName = keyof typeof Options;

/** The state store calls approvals need. */
export type ApprovalStore = Pick<
  StateStore,
  | "addApproval"
  | "setApprovalMessage"
  | "getApproval"
  | "decideApproval"
  | "sessionAllowed"
  | "latestPendingApproval"
  | "recentApprovals"
  | "now"
>;

/** What a profile gives approvals: its settings (admins) and its store. */
export interface ApprovalProfile {
  readonly profile: ProfileConfig;
  readonly store: ApprovalStore;
}

/** One action to ask about, from a running turn. */
export interface ApprovalRequest {
  readonly profile: string;
  readonly channel: ChannelAdapter;
  readonly target: ChatTarget;
  readonly sessionKey: string;
  readonly sessionId: string;
  /** The platform and user id of the person whose message started the turn. */
  readonly platform: Platform;
  readonly userId: string;
  readonly settings: ApprovalSettings;
  readonly action: AgentAction;
  readonly reason: string;
  /** The turn's signal: /stop, /reset or a newer message cancel the question. */
  readonly signal: AbortSignal;
  readonly log: Logger;
}

/** Options of {@link ApprovalBroker}. */
/** A typed `/allow`, `/allow session` or `/deny`: who sent it, when, and what it says. */
export interface TypedAnswer {
  readonly userId: string;
  readonly userName?: string | undefined;
  readonly status: "allowed" | "allowed_session" | "denied";
  /** When the platform says it was sent (`InboundMessage.sentAtMs`); absent: not checked. */
  readonly sentAtMs?: number | undefined;
}

export interface ApprovalBrokerOptions {
  /** The profile a press or typed answer belongs to, by name. */
  readonly profileOf: (name: string) => ApprovalProfile | undefined;
  readonly logger: Logger;
  /** Expiry and watch timers (tests fire them by hand). Default: real unref'd timers. */
  readonly schedule?: Schedule | undefined;
  /** This process's id in the records it waits for. Default: a random one. */
  readonly waiter?: string | undefined;
  /**
   * With replicas (docs/cluster.md): whether `record`, which this process does not wait for,
   * is waited for by another live process, its session's holder. Its answer is then recorded
   * for that process to act on, not closed as `interrupted`. Default: never (one process).
   */
  readonly waitsElsewhere?:
    | ((profile: string, record: ApprovalRecord) => Promise<boolean>)
    | undefined;
  /**
   * With replicas: how often a waiting question reads its record again, to end with an answer
   * another process recorded ({@link waitsElsewhere}). Default: never.
   */
  readonly watchMs?: number | undefined;
}

/** How a waiting question ended, as the turn needs it. */
type Outcome = Pick<ApprovalRecord, "status" | "decidedBy" | "decidedByName">;

interface Waiting {
  readonly resolve: (outcome: Outcome) => void;
  readonly channel: ChannelAdapter;
  readonly target: ChatTarget;
  /** The question's message, once posted and recorded. */
  messageId?: string | undefined;
  /**
   * A decision (not a press) made while the question was being posted: its record had no
   * message yet, so the buttons are closed once the message is known.
   */
  unclosed?: ApprovalRecord | undefined;
}

/**
 * Asks approvers before the agent acts (docs/approvals.md) and takes their answers: button
 * presses (registered with the choice router under {@link ApprovalChoiceKind}), typed
 * `/allow` and `/deny`, the expiry timer and the turn's abort. Every decision is one
 * conditional write of the state store (only the first counts), so a second press, a press
 * racing the expiry or a /stop, and a press after a restart are each answered once and
 * clearly. The turn that asked waits in memory: after a restart its approval is found
 * `pending` with another process's waiter id and is closed as `interrupted`.
 */
export class ApprovalBroker {
  /** This process's id in the records it waits for. */
  readonly waiter: string;
  readonly #waiting = new Map<string, Waiting>();
  readonly #options: ApprovalBrokerOptions;
  readonly #schedule: Schedule;

  constructor(options: ApprovalBrokerOptions) {
    this.#options = options;
    this.#schedule = options.schedule ?? scheduleWithTimer;
    this.waiter = options.waiter ?? choiceId();
  }

  /** How many approvals this process waits for now. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /**
   * Asks, and resolves once the answer is yes; rejects with a {@link ToolRefusedError} for a
   * no, an expiry or too many approvals waiting, and with the signal's reason when the turn is
   * aborted. Resolves `session` when the approver allowed the rest of the session.
   */
  async ask(request: ApprovalRequest): Promise<"once" | "session"> {
    const profile = this.#options.profileOf(request.profile);
    if (profile === undefined) throw new Error(`unknown profile ${request.profile}`);
    const { store } = profile;
    const now = store.now();
    const record: ApprovalRecord = {
      id: choiceId(),
      sessionKey: request.sessionKey,
      sessionId: request.sessionId,
      platform: request.platform,
      chatId: request.target.chatId,
      threadId: request.target.threadId,
      requester: `${request.platform}:${request.userId}`,
      approvers: request.settings.approvers,
      action: describeAction(request.action, Defaults.approvals.actionMaxChars),
      reason: request.reason,
      waiter: this.waiter,
      createdMs: now,
      expiresMs: now + request.settings.expiresSeconds * 1000,
      status: "pending",
    };
    const added = await store.addApproval(
      record,
      Defaults.approvals.maxPending,
      Defaults.approvals.keepSeconds * 1000,
    );
    const log = request.log.child({ approval: record.id });
    if (!added.added) {
      log.warn({ pending: added.pending }, "approval refused: too many waiting");
      throw new ToolRefusedError(
        "too many actions are waiting for approval in this profile; try again later",
        "busy",
      );
    }
    log.info({ action: record.action, reason: record.reason }, "approval asked");
    const decided = new Promise<Outcome>((resolve) => {
      this.#waiting.set(record.id, { resolve, channel: request.channel, target: request.target });
    });
    const cancelTimer = this.#schedule(() => {
      void this.#decideQuietly(profile, record.id, "expired", "timer", undefined);
    }, record.expiresMs - now);
    const cancelWatch = this.#watch(profile, record.id, log);
    // The gateway's stop leaves the message to run again after the restart (it asks anew).
    const onAbort = () => {
      const status = abortedByStop(request.signal) ? "interrupted" : "cancelled";
      void this.#decideQuietly(profile, record.id, status, "gateway", undefined);
    };
    request.signal.addEventListener("abort", onAbort, { once: true });
    try {
      if (request.signal.aborted) onAbort();
      else await this.#post(profile, record, request);
      const final = await decided;
      log.info(
        { status: final.status, by: final.decidedBy, byName: final.decidedByName },
        "approval decided",
      );
      switch (final.status) {
        case "allowed":
          return "once";
        case "allowed_session":
          return "session";
        case "cancelled":
        case "interrupted":
          if (request.signal.aborted) throw request.signal.reason;
          if (final.status === "interrupted" && final.decidedBy !== "gateway") {
            throw new ToolRefusedError(
              "the answer reached another gateway process than the one waiting for it, so it was not run; ask again",
              "denied",
            );
          }
          throw new ToolRefusedError("the question could not be shown in the chat", "denied");
        case "expired":
          throw new ToolRefusedError(
            `nobody approved it within ${Math.round(request.settings.expiresSeconds / 60)} min (the approval expired); it was not run`,
            "expired",
          );
        default:
          throw new ToolRefusedError(
            `${final.decidedByName ?? "an approver"} denied it; it was not run. Choose another way or ask the user`,
            "denied",
          );
      }
    } finally {
      cancelTimer();
      cancelWatch();
      request.signal.removeEventListener("abort", onAbort);
      this.#waiting.delete(record.id);
    }
  }

  /**
   * With replicas ({@link ApprovalBrokerOptions.watchMs}): reads the question's record every
   * `watchMs` while it waits, and ends the wait with an answer another process recorded (a
   * press or a typed answer that reached the replica holding the bot's connection). Returns
   * what stops the watch.
   */
  #watch(profile: ApprovalProfile, id: string, log: Logger): () => void {
    const watchMs = this.#options.watchMs;
    if (watchMs === undefined) return () => {};
    let cancel = (): void => {};
    let stopped = false;
    const look = async (): Promise<void> => {
      try {
        const record = await profile.store.getApproval(id);
        if (record !== undefined && record.status !== "pending") {
          this.#waiting.get(id)?.resolve(record);
          return;
        }
      } catch (error) {
        log.warn({ err: error }, "could not read the approval's record; trying again");
      }
      if (!stopped) cancel = this.#schedule(() => void look(), watchMs);
    };
    cancel = this.#schedule(() => void look(), watchMs);
    return () => {
      stopped = true;
      cancel();
    };
  }

  /** Whether an approver allowed `sessionId` of `profile` to act without asking (until /reset). */
  async sessionAllowed(profile: string, sessionId: string): Promise<boolean> {
    return (await this.#options.profileOf(profile)?.store.sessionAllowed(sessionId)) === true;
  }

  /** Posts the question: with buttons where the channel has them, else as text with typed answers. */
  async #post(profile: ApprovalProfile, record: ApprovalRecord, request: ApprovalRequest) {
    const text = questionText(record, request.settings);
    const signal = AbortSignal.any([
      request.signal,
      AbortSignal.timeout(Defaults.progress.requestTimeoutMs),
    ]);
    try {
      const choices = request.channel.choices;
      if (choices === undefined) {
        await request.channel.sendText(request.target, `${text}\n${TypedHint}`, signal);
        return;
      }
      const messageId = await choices.post(
        request.target,
        text,
        approvalButtons(record.id),
        signal,
      );
      await profile.store.setApprovalMessage(record.id, messageId);
      // Whichever comes second, this or a decision, closes the buttons: a decision made while
      // the question was on its way (the timer, a typed /deny, a stop) found no message.
      const waiting = this.#waiting.get(record.id);
      if (waiting !== undefined) {
        waiting.messageId = messageId;
        if (waiting.unclosed !== undefined) {
          await this.#close(waiting, messageId, decidedText(waiting.unclosed), record.id);
        }
      }
    } catch (error) {
      if (request.signal.aborted) return;
      request.log.error(
        { err: error, approval: record.id },
        "could not show the approval question",
      );
      await this.#decideQuietly(profile, record.id, "cancelled", "gateway", undefined);
    }
  }

  /**
   * Decides `id` unless it is decided already; the waiting turn (in this process) goes on.
   * Unless the decision came from a press (whose answer edits the message), the buttons are
   * closed with the outcome.
   */
  async decide(
    profile: ApprovalProfile,
    id: string,
    status: Exclude<ApprovalStatus, "pending">,
    by: string,
    byName: string | undefined,
    options: { viaPress: boolean } = { viaPress: false },
  ): Promise<{ decided: boolean; record: ApprovalRecord | undefined }> {
    const result = await profile.store.decideApproval(id, status, by, byName);
    const record = result.record;
    const waiting = this.#waiting.get(id);
    if (!result.decided || record === undefined) {
      // Decided by another process of the profile (its decision edited the message): the turn
      // waiting here ends with that decision instead of waiting for one that cannot come.
      if (record !== undefined && record.status !== "pending") waiting?.resolve(record);
      return result;
    }
    if (waiting !== undefined) {
      waiting.resolve(record);
      if (options.viaPress) return result;
      const messageId = record.messageId ?? waiting.messageId;
      if (messageId === undefined) waiting.unclosed = record;
      else await this.#close(waiting, messageId, decidedText(record), record.id);
    }
    return result;
  }

  /** Edits a decided question's message to `text` (its outcome), without the buttons. */
  async #close(
    where: Pick<Waiting, "channel" | "target">,
    messageId: string,
    text: string,
    id: string,
  ) {
    await where.channel.choices
      ?.close(
        where.target,
        messageId,
        text,
        AbortSignal.timeout(Defaults.progress.requestTimeoutMs),
      )
      .catch((error: unknown) =>
        this.#options.logger.warn(
          { err: error, approval: id },
          "could not close the approval's buttons",
        ),
      );
  }

  async #decideQuietly(
    profile: ApprovalProfile,
    id: string,
    status: Exclude<ApprovalStatus, "pending">,
    by: string,
    byName: string | undefined,
  ): Promise<void> {
    try {
      await this.decide(profile, id, status, by, byName);
    } catch (error) {
      this.#options.logger.error(
        { err: error, approval: id, status },
        "could not record an approval's end",
      );
      // The turn must not wait forever on a store that failed: it ends as if denied.
      this.#waiting.get(id)?.resolve({ status: "cancelled", decidedBy: "gateway" });
    }
  }

  /** The choice router's handler of {@link ApprovalChoiceKind} presses. */
  readonly onPress: ChoiceHandler = async (press, data) => {
    const profile = this.#options.profileOf(press.profile);
    const option = data.option in Options ? (data.option as OptionName) : undefined;
    const record =
      profile === undefined || option === undefined
        ? undefined
        : await profile.store.getApproval(data.id);
    if (
      profile === undefined ||
      option === undefined ||
      record === undefined ||
      !samePlace(record, press)
    ) {
      this.#options.logger.info(
        { profile: press.profile, chatId: press.chatId, user: `${press.platform}:${press.userId}` },
        "approval press refused: unknown approval or another chat",
      );
      return { kind: "refused", notice: UnknownChoiceText };
    }
    return this.#answer(
      profile,
      record,
      press.platform,
      press.userId,
      press.userName,
      Options[option],
      true,
    );
  };

  /**
   * A typed `/allow`, `/allow session` or `/deny` in a chat: decides the chat's newest pending
   * approval, unless the answer was sent before that question was asked (docs/approvals.md).
   * Answers the line to say. `channel` is the chat's: when another process waits for the
   * question, its buttons are closed through it here.
   */
  async typed(
    profileName: string,
    where: { platform: Platform; chatId: string; threadId?: string | undefined },
    answer: TypedAnswer,
    channel?: ChannelAdapter,
  ): Promise<string> {
    const { userId, userName, status } = answer;
    const profile = this.#options.profileOf(profileName);
    const record =
      profile === undefined
        ? undefined
        : await profile.store.latestPendingApproval(where.platform, where.chatId, where.threadId);
    if (profile === undefined || record === undefined)
      return "Nothing is waiting for approval here.";
    if (
      answer.sentAtMs !== undefined &&
      answer.sentAtMs + Defaults.approvals.typedAnswerSlackMs < record.createdMs
    ) {
      this.#options.logger.info(
        { approval: record.id, user: `${where.platform}:${userId}` },
        "typed approval answer refused: sent before the question was asked",
      );
      return sentBeforeText(record, status);
    }
    const waitingHere = this.#waiting.has(record.id);
    const decided = await this.#answer(
      profile,
      record,
      where.platform,
      userId,
      userName,
      status,
      false,
    );
    if (decided.kind !== "decided") return decided.notice;
    // Another process waits for it (or none does any more): no waiting turn here closes the
    // buttons, so the answer does, as a press's answer does.
    const messageId = record.messageId;
    if (!waitingHere && channel !== undefined && messageId !== undefined) {
      await this.#close({ channel, target: where }, messageId, decided.text, record.id);
    }
    return decided.notice ?? decided.text;
  }

  async #answer(
    profile: ApprovalProfile,
    record: ApprovalRecord,
    platform: Platform,
    userId: string,
    userName: string | undefined,
    status: "allowed" | "allowed_session" | "denied",
    viaPress: boolean,
  ): Promise<ChoiceAnswer> {
    const user = `${platform}:${userId}`;
    if (record.status !== "pending") {
      return { kind: "refused", notice: `Already decided: ${decidedText(record).split("\n")[0]}` };
    }
    const admin = accessOf(profile.profile, platform, userId).admin;
    if (!admin && (record.approvers === "admins" || record.requester !== user)) {
      this.#options.logger.info(
        { approval: record.id, user },
        "approval press refused: not an approver",
      );
      return { kind: "refused", notice: refusalOf(record) };
    }
    const late = profile.store.now() >= record.expiresMs;
    // Nobody waits for it any more (a restart): it is closed, its command not run. With
    // replicas, the process whose turn waits may be another one: the answer is recorded there.
    const stale =
      !this.#waiting.has(record.id) &&
      !late &&
      (record.waiter === this.waiter ||
        (await this.#options.waitsElsewhere?.(profile.profile.name, record)) !== true);
    const final: Exclude<ApprovalStatus, "pending"> = late
      ? "expired"
      : stale
        ? "interrupted"
        : status;
    const by = late ? "timer" : user;
    const result = await this.decide(
      profile,
      record.id,
      final,
      by,
      late ? undefined : (userName ?? user),
      {
        viaPress,
      },
    );
    if (!result.decided || result.record === undefined) {
      const now = result.record ?? record;
      return { kind: "refused", notice: `Already decided: ${decidedText(now).split("\n")[0]}` };
    }
    this.#options.logger.info(
      { approval: record.id, status: final, by: user, action: record.action },
      final === status ? "approval answered" : `approval answered too late (${final})`,
    );
    const text = decidedText(result.record);
    return { kind: "decided", text, notice: text.split("\n")[0] };
  }
}

function samePlace(record: ApprovalRecord, press: ChoicePress): boolean {
  return (
    record.platform === press.platform &&
    record.chatId === press.chatId &&
    (record.messageId === undefined || record.messageId === press.messageId)
  );
}

/** The three buttons of an approval. */
export function approvalButtons(id: string): ChoiceButton[][] {
  const data = (option: OptionName) => formatChoiceData({ kind: ApprovalChoiceKind, id, option });
  return [
    [
      { label: "Allow once", data: data("once"), style: "primary" },
      { label: "Allow for this session", data: data("session"), style: "secondary" },
    ],
    [{ label: "Deny", data: data("deny"), style: "danger" }],
  ];
}
