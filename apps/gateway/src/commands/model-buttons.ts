import { accessOf } from "../access-control/access.js";
import { modelNamed } from "../agents/models.js";
import type {
  ChannelAdapter,
  ChatTarget,
  ChatType,
  ChoiceButton,
  InboundMessage,
} from "../channels/types.js";
import { type ChoiceData, choiceId, formatChoiceData } from "../choices/choice-data.js";
import type { ChoiceHandler } from "../choices/router.js";
import { Defaults } from "../defaults.js";
import type { Logger } from "../log.js";
import type { PipelineRuntime } from "../pipeline/types.js";
import { buildSessionKey } from "../session/key.js";
import { chooseModel, currentModel, describeChoice, pickableModels } from "./model.js";

/** The button kind of `/model` pickers in choice data (`md:<id>:<index>`). */
export const ModelChoiceKind = "md";

/** The most pickers kept answerable; the oldest is forgotten first. */
const MaxOffers = 200;

/** Discord's limits: 5 rows of 5 buttons; more models than that get the typed list only. */
const MaxRows = 5;
const MaxPerRow = 5;

const SendAgain = "send /model for the current choices.";
const Gone = `This button does nothing any more; ${SendAgain}`;

interface Offer {
  readonly profile: string;
  readonly sessionKey: string;
  readonly chatType: ChatType;
  readonly threadId: string | undefined;
  /** Who sent the `/model`: in a DM, the only one who can type in it. */
  readonly askerId: string;
  readonly target: ChatTarget;
  /** The picker's message id once posted (`undefined` when the post failed). */
  readonly messageId: Promise<string | undefined>;
  /** The names offered, in button order: a press carries an index into it, never the name. */
  readonly names: readonly string[];
  chosen?: { readonly name: string; readonly by: string } | undefined;
}

/**
 * The button data of offer `id`'s `index`-th model: `md:<id>:<index>` (at most 30 bytes
 * whatever the names: model names may be 64 characters, so they never travel).
 */
export function modelChoiceData(id: string, index: number): string {
  return formatChoiceData({ kind: ModelChoiceKind, id, option: String(index) });
}

/** The index a press's option names, or `undefined` for anything not built by {@link modelChoiceData}. */
export function modelChoiceIndex(data: ChoiceData): number | undefined {
  if (data.kind !== ModelChoiceKind || !/^(0|[1-9][0-9]{0,2})$/.test(data.option)) return undefined;
  return Number(data.option);
}

/**
 * The picker's rows: one button per name (the current one marked ✓), at most five rows
 * (Discord's limit), so up to five buttons a row; `undefined` when there is nothing to choose
 * between (fewer than two names) or more names than 25 buttons hold.
 */
export function modelButtonRows(
  names: readonly string[],
  current: string,
  dataOf: (index: number) => string,
): ChoiceButton[][] | undefined {
  if (names.length < 2 || names.length > MaxRows * MaxPerRow) return undefined;
  const perRow = Math.ceil(names.length / MaxRows);
  const rows: ChoiceButton[][] = [];
  names.forEach((name, index) => {
    const button: ChoiceButton = {
      label: name === current ? `✓ ${name}` : name,
      data: dataOf(index),
      style: name === current ? "primary" : "secondary",
    };
    if (index % perRow === 0) rows.push([button]);
    else rows.at(-1)?.push(button);
  });
  return rows;
}

/** What {@link ModelPickers} needs of the gateway. */
export interface ModelPickersOptions {
  readonly runtimeOf: (profile: string) => PipelineRuntime | undefined;
  readonly logger: Logger;
}

/**
 * A bare `/model` on a channel with buttons posts the model list with one button per model
 * the sender may pick (docs/models-and-usage.md, "Buttons"). A press switches the session the
 * list was asked for, through {@link chooseModel}, for whoever could have typed `/model <name>`
 * for that session: in a per-member session only its member, in a shared one any allowed user
 * of the chat (with their own rights: a member's press on an admin-only model is refused). The
 * first switch closes the picker with who chose what; a later press is told it was chosen. The
 * pickers live in this process: after a restart a press is told to send /model again.
 */
export class ModelPickers {
  readonly #offers = new Map<string, Offer>();

  constructor(private readonly options: ModelPickersOptions) {}

  /**
   * Posts `text` (the typed list) with the sender's choices as buttons; false when the channel
   * has no buttons, there is nothing to choose between, or the post failed (the caller sends
   * the text alone then).
   */
  async offer(
    channel: ChannelAdapter,
    target: ChatTarget,
    message: InboundMessage,
    runtime: PipelineRuntime,
    sessionKey: string,
    admin: boolean,
    text: string,
  ): Promise<boolean> {
    const choices = channel.choices;
    const agent = runtime.profile.agent;
    if (choices === undefined || agent.kind !== "openai") return false;
    const names = pickableModels(agent, admin).map((entry) => entry.name);
    const current = await currentModel(runtime.store, agent, sessionKey);
    const id = choiceId();
    const rows = modelButtonRows(names, current.name, (index) => modelChoiceData(id, index));
    if (rows === undefined) return false;
    const posted = choices.post(
      target,
      text,
      rows,
      AbortSignal.timeout(Defaults.progress.requestTimeoutMs),
    );
    // Known before the post resolves: a press can arrive before the platform's answer does.
    if (this.#offers.size >= MaxOffers) {
      const oldest = this.#offers.keys().next().value;
      if (oldest !== undefined) this.#offers.delete(oldest);
    }
    this.#offers.set(id, {
      profile: message.profile,
      sessionKey,
      chatType: message.chatType,
      threadId: message.threadId,
      askerId: message.userId,
      target,
      messageId: posted.catch(() => undefined),
      names,
    });
    try {
      await posted;
      return true;
    } catch (error) {
      this.#offers.delete(id);
      this.options.logger.warn({ err: error }, "could not post the /model buttons");
      return false;
    }
  }

  /** The choice router's handler of {@link ModelChoiceKind} presses. */
  readonly onPress: ChoiceHandler = async (press, data) => {
    const offer = this.#offers.get(data.id);
    const runtime = offer === undefined ? undefined : this.options.runtimeOf(offer.profile);
    const agent = runtime?.profile.agent;
    const index = modelChoiceIndex(data);
    const name = index === undefined ? undefined : offer?.names[index];
    const messageId = await offer?.messageId;
    if (
      offer === undefined ||
      runtime === undefined ||
      agent?.kind !== "openai" ||
      name === undefined ||
      offer.profile !== press.profile ||
      offer.target.platform !== press.platform ||
      offer.target.chatId !== press.chatId ||
      messageId !== press.messageId
    ) {
      return { kind: "refused", notice: Gone };
    }
    const access = await accessOfPresser(runtime, press.platform, press.userId);
    if (!access.allowed) {
      return { kind: "refused", notice: "⛔ You are not allowed to use this bot." };
    }
    const pressersKey = buildSessionKey(
      {
        profile: offer.profile,
        platform: press.platform,
        chatType: offer.chatType,
        chatId: press.chatId,
        threadId: offer.threadId,
        userId: press.userId,
      },
      runtime.profile,
    );
    // A DM's key has no user part: the chat is its user, so nobody else could type there.
    const dmOfAnother = offer.chatType === "dm" && press.userId !== offer.askerId;
    if (pressersKey !== offer.sessionKey || dmOfAnother) {
      return {
        kind: "refused",
        notice: "These buttons choose the model of someone else's session; send /model for yours.",
      };
    }
    if (offer.chosen !== undefined) {
      return {
        kind: "refused",
        notice: `Already chosen: ${offer.chosen.name} by ${offer.chosen.by}. Send /model to change it again.`,
      };
    }
    const model = modelNamed(agent, name);
    if (model === undefined) {
      return { kind: "refused", notice: `${name} is no longer configured; ${SendAgain}` };
    }
    if (!pickableModels(agent, access.admin).includes(model)) {
      return { kind: "refused", notice: describeChoice({ status: "not_allowed", model }) };
    }
    const by = press.userName ?? `${press.platform}:${press.userId}`;
    // Taken before the first await, so a second press racing this one is told it was chosen.
    offer.chosen = { name, by };
    const choice = await chooseModel(runtime.store, agent, offer.sessionKey, name, access.admin);
    if (choice.status !== "switched" || choice.unchanged) {
      offer.chosen = undefined;
      return { kind: "refused", notice: describeChoice(choice) };
    }
    runtime.log.info(
      { sessionKey: offer.sessionKey, model: name, by },
      "session model switched with a button",
    );
    return {
      kind: "decided",
      text: `🔁 ${by} switched this session to ${name} (${model.model}). Send /model to change it again.`,
      notice: describeChoice(choice),
    };
  };
}

/** The presser's rights in the profile, as `authorize` gives them to a typed message. */
export async function accessOfPresser(
  runtime: PipelineRuntime,
  platform: InboundMessage["platform"],
  userId: string,
): Promise<{ readonly allowed: boolean; readonly admin: boolean }> {
  const access = accessOf(runtime.profile, platform, userId);
  if (access.allowed || runtime.profile.access !== "pairing") return access;
  return { allowed: await runtime.store.isPaired(`${platform}:${userId}`), admin: false };
}
