import {
  type ApplicationCommandDataResolvable,
  ApplicationCommandOptionType,
  ApplicationCommandType,
  type ChatInputCommandInteraction,
  type Client,
  MessageFlags,
} from "discord.js";
import type { Logger } from "pino";
import {
  commandText,
  MenuCommands,
  type MenuOffer,
  menuCommandNamed,
  PlainOffer,
} from "../../commands/menu.js";
import { splitText } from "../../delivery/split-text.js";
import type { InboundMessage } from "../types.js";
import { describeError, toRequestError } from "./errors.js";
import { readSlashOptions, unreadableOptionsText } from "./slash-options.js";

/** `commands` of {@link DiscordChannelOptions}: the slash commands (docs/sessions.md). */
export interface DiscordCommandOptions {
  /** Register them at start-up (one bulk overwrite of the global commands); default true. */
  readonly register?: boolean | undefined;
  /** What the profile offers (its agent, approvals, pairing): the commands registered. */
  readonly offer?: MenuOffer | undefined;
}

/** Discord's longest text option value; the text commands need far less. */
const MaxTextOption = 1000;

/** Discord's limit of one message, and of an interaction's reply. */
const ReplyLimit = 2000;

/**
 * The answer a slash command gets when the pipeline said nothing (the sender is not allowed:
 * in a server channel the text command would be ignored silently; the ephemeral answer is
 * seen by the sender only). In a pairing profile (`pairing`) such a sender is pointed to a
 * DM, where the bot gives them a code (a server channel never gets one: docs/security.md,
 * "Pairing"); otherwise to the operator, who lists users in the config.
 */
export function notAllowedText(userId: string, pairing: boolean): string {
  const what = pairing
    ? "You are not allowed to use this bot yet. Send it a direct message to ask for access: it answers with a one-time code for an admin to approve."
    : "You are not allowed to use this bot. Ask its operator to add your user id.";
  return `⛔ ${what} (discord:${userId})`;
}

/** A slash command's message id (and receipt): never a snowflake, so no catch-up cursor moves. */
const InteractionPrefix = "interaction:";

/** Whether a message id (a reply target) stands for a slash command rather than a message. */
export function isInteractionMessageId(id: string | undefined): id is string {
  return id?.startsWith(InteractionPrefix) === true;
}

/**
 * The global application commands: those of the shared menu the profile offers (`/help`,
 * `/status`, `/stop` with `all`, `/reset` with `confirm`, the `openai` agent's `/new`,
 * `/compact` with `focus`, `/model`, `/usage`, `/allow` with `session` and `/deny` where
 * approvals ask, the task commands `/every`, `/at`, `/cron` with their timing and `prompt`,
 * `/tasks` with `action` and `id`, `/approve` with `code` in a pairing profile). Everyone sees every command
 * (Discord shows a bot's commands by permission, not by user id); the gateway gates them when
 * they are used.
 */
export function discordCommandData(
  offer: MenuOffer = PlainOffer,
): ApplicationCommandDataResolvable[] {
  return MenuCommands.filter((command) => command.audience(offer) !== "none").map((command) => ({
    type: ApplicationCommandType.ChatInput,
    name: command.name,
    description: command.description,
    options: (command.options ?? []).map((option) =>
      (option.kind ?? "flag") === "flag"
        ? {
            type: ApplicationCommandOptionType.Boolean as const,
            name: option.name,
            description: option.description,
            required: false,
          }
        : {
            type: ApplicationCommandOptionType.String as const,
            name: option.name,
            description: option.description,
            required: option.required === true,
            maxLength: MaxTextOption,
            ...(option.choices === undefined
              ? {}
              : { choices: option.choices.map((value) => ({ name: value, value })) }),
          },
    ),
  }));
}

/**
 * Overwrites the bot's global commands with {@link discordCommandData} (`PUT
 * /applications/{id}/commands`: the same set again changes nothing, so every start may do it).
 * discord.js bounds the attempts (3 retries of a 5xx or timeout, rate limits waited out). A
 * failure is a warning: the typed commands still work. Never rejects.
 */
export async function registerDiscordCommands(
  client: Client,
  log: Logger,
  offer: MenuOffer = PlainOffer,
): Promise<boolean> {
  const application = client.application;
  if (application === null) {
    log.warn("discord slash commands not registered: no application id after login");
    return false;
  }
  try {
    const set = await application.commands.set(discordCommandData(offer));
    log.info(
      { applicationId: application.id, commands: [...set.values()].map((c) => c.name) },
      "discord slash commands registered (global)",
    );
    return true;
  } catch (error) {
    log.warn(
      { applicationId: application.id, err: describeError(error) },
      "discord slash commands not registered; the commands still work when typed",
    );
    return false;
  }
}

/** What a slash command is to the gateway (see {@link interactionToInbound}). */
export type SlashCommandRead =
  | { readonly kind: "inbound"; readonly inbound: InboundMessage }
  /** A command this gateway does not register (a stale registration, another program's). */
  | { readonly kind: "unknown" }
  /** One of its commands with options it cannot read: `text` answers the user. */
  | { readonly kind: "unreadable"; readonly problem: string; readonly text: string };

/**
 * A slash command as the core sees a message: the text command it stands for (`/reset` with
 * `confirm` chosen is `/reset confirm`, `/compact` with a focus `/compact <focus>`) in the chat it was used in, so the same session and the
 * same gating apply. Its id is `interaction:<id>` (see {@link isInteractionMessageId}).
 * The options are read defensively ({@link readSlashOptions}): options a registration other
 * than this gateway's makes Discord send are `unreadable`, never an exception.
 */
export function interactionToInbound(
  interaction: ChatInputCommandInteraction,
  profile: string,
): SlashCommandRead {
  const command = menuCommandNamed(interaction.commandName);
  if (command === undefined || interaction.channelId === null) return { kind: "unknown" };
  const options = readSlashOptions(command, interaction.options.data);
  if (!options.ok) {
    return {
      kind: "unreadable",
      problem: options.problem,
      text: unreadableOptionsText(command, options.problem),
    };
  }
  const text = commandText(command, (option) => options.chosen.get(option));
  const id = `${InteractionPrefix}${interaction.id}`;
  const user = interaction.user;
  const base = {
    profile,
    platform: "discord" as const,
    userId: user.id,
    userName: user.globalName ?? user.username,
    messageId: id,
    receiptId: id,
    text,
    sentAtMs: interaction.createdTimestamp,
  };
  if (!interaction.inGuild()) {
    const inbound: InboundMessage = {
      ...base,
      chatType: "dm",
      chatId: interaction.channelId,
      chatName: base.userName,
    };
    return { kind: "inbound", inbound };
  }
  const channel = interaction.channel;
  if (channel?.isThread() === true) {
    const inbound: InboundMessage = {
      ...base,
      chatType: "group",
      chatId: channel.parentId ?? channel.id,
      threadId: channel.id,
      chatName: channel.name,
    };
    return { kind: "inbound", inbound };
  }
  const chatName = channel !== null && "name" in channel ? `#${channel.name}` : undefined;
  const inbound: InboundMessage = {
    ...base,
    chatType: "group",
    chatId: interaction.channelId,
    chatName,
  };
  return { kind: "inbound", inbound };
}

interface Pending {
  readonly interaction: ChatInputCommandInteraction;
  answered: boolean;
}

/**
 * The slash commands waiting for their answer. Each is deferred ephemerally at once (Discord
 * wants an answer within 3 s; /reset may take longer), the first text the core sends for it
 * edits that deferred reply, later ones are ephemeral follow-ups; when the core is done with
 * it and said nothing, it gets {@link notAllowedText}.
 */
export class InteractionReplies {
  readonly #pending = new Map<string, Pending>();

  /** @param pairing the profile pairs unknown users (`access: pairing`): {@link notAllowedText}. */
  constructor(
    private readonly log: Logger,
    private readonly pairing: boolean,
  ) {}

  /** Defers the reply (ephemeral); false when Discord refused (then nothing more is sent). */
  async defer(messageId: string, interaction: ChatInputCommandInteraction): Promise<boolean> {
    try {
      await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    } catch (error) {
      this.log.warn(
        { command: interaction.commandName, err: describeError(error) },
        "discord slash command could not be acknowledged",
      );
      return false;
    }
    this.#pending.set(messageId, { interaction, answered: false });
    return true;
  }

  /** Whether `messageId` is a slash command still waiting here. */
  has(messageId: string | undefined): boolean {
    return messageId !== undefined && this.#pending.has(messageId);
  }

  /** Sends `text` as the command's ephemeral answer (split at 2000 characters). */
  async answer(messageId: string, text: string): Promise<void> {
    const pending = this.#pending.get(messageId);
    if (pending === undefined) throw new Error("no slash command waits for this answer");
    for (const content of splitText(text, { maxLength: ReplyLimit })) {
      try {
        if (pending.answered) {
          await pending.interaction.followUp({ content, flags: MessageFlags.Ephemeral });
        } else {
          await pending.interaction.editReply({ content });
        }
      } catch (error) {
        throw toRequestError("interaction reply", error);
      }
      pending.answered = true;
    }
  }

  /** Drops a command whose interaction is gone: nothing more is sent through it. */
  forget(messageId: string): void {
    this.#pending.delete(messageId);
  }

  /** The core is done with it: a command that got no answer is told it is not allowed. */
  async settle(messageId: string, userId: string): Promise<void> {
    const pending = this.#pending.get(messageId);
    if (pending === undefined) return;
    this.#pending.delete(messageId);
    if (pending.answered) return;
    try {
      await pending.interaction.editReply({ content: notAllowedText(userId, this.pairing) });
    } catch (error) {
      this.log.warn({ err: describeError(error) }, "discord slash command refusal not sent");
    }
  }

  /**
   * The core did not take it (not recorded): answered with `text` unless something was said
   * already (the journal's "could not be saved" notice), then forgotten.
   */
  async abandon(messageId: string, text: string): Promise<void> {
    const pending = this.#pending.get(messageId);
    this.#pending.delete(messageId);
    if (pending === undefined || pending.answered) return;
    try {
      await pending.interaction.editReply({ content: text });
    } catch (error) {
      this.log.warn({ err: describeError(error) }, "discord slash command answer not sent");
    }
  }
}
