import {
  type ButtonInteraction,
  escapeMarkdown,
  MessageFlags,
  type REST,
  Routes,
} from "discord.js";
import type { Logger } from "pino";
import { UnknownChoiceText } from "../../choices/router.js";
import type {
  ChatTarget,
  ChoiceAnswer,
  ChoiceButton,
  ChoiceButtons,
  ChoicePress,
} from "../types.js";
import { isInteractionMessageId } from "./commands.js";
import { describeError } from "./errors.js";

/** A slash command's own answer when its question was posted in the chat with buttons. */
export const AskedInChatText = "The question is in the chat, with buttons to answer it.";

/** Discord's button styles: Primary 1, Secondary 2, Danger 4. */
const Styles = { primary: 1, secondary: 2, danger: 4 } as const;

/**
 * Choice buttons on Discord (docs/approvals.md, "Buttons"): a message with action rows of
 * buttons (message components), closed by editing it with no components. Posted and edited
 * through the delivery REST instance, one try each; mentions off, text escaped. A question
 * asked for a slash command (`/reset`, `/model`) is posted in the chat like a typed command's
 * (an ephemeral answer could not be closed after a restart), and `askedFor` gives the slash
 * command its own answer, {@link AskedInChatText}.
 */
export class DiscordChoiceButtons implements ChoiceButtons {
  constructor(
    private readonly rest: REST,
    private readonly log: Logger,
    private readonly askedFor: (slashCommand: string, text: string) => Promise<void>,
  ) {}

  async post(
    target: ChatTarget,
    text: string,
    rows: readonly (readonly ChoiceButton[])[],
    signal: AbortSignal,
  ): Promise<string> {
    const created = (await this.rest.post(Routes.channelMessages(channelOf(target)), {
      body: {
        content: escapeMarkdown(text),
        allowed_mentions: { parse: [] },
        components: rows.map((row) => ({
          type: 1,
          components: row.map((button) => ({
            type: 2,
            style: Styles[button.style ?? "secondary"],
            label: button.label,
            custom_id: button.data,
          })),
        })),
      },
      signal,
    })) as { id: string };
    const slash = target.replyToMessageId;
    if (isInteractionMessageId(slash)) {
      await this.askedFor(slash, AskedInChatText).catch((error: unknown) =>
        this.log.warn(
          { err: describeError(error) },
          "slash command not told where its question is",
        ),
      );
    }
    return created.id;
  }

  async close(
    target: ChatTarget,
    messageId: string,
    text: string,
    signal: AbortSignal,
  ): Promise<void> {
    await this.rest.patch(Routes.channelMessage(channelOf(target), messageId), {
      body: { content: escapeMarkdown(text), components: [], allowed_mentions: { parse: [] } },
      signal,
    });
  }

  /**
   * Answers a button interaction: a decision updates the pressed message (its new text, no
   * buttons, mentions off: the interaction's `update` callback), a refusal is an ephemeral reply
   * only the presser sees. The handler decides with one state-store write, meant to fit in the
   * 3 s Discord gives an interaction; when the update fails (too late: 10062 Unknown
   * interaction), the decision stands, so the message is edited as the bot's own instead: it
   * never keeps asking with buttons for what was decided. Never throws.
   */
  async answer(
    interaction: ButtonInteraction,
    profile: string,
    handler: ((press: ChoicePress) => Promise<ChoiceAnswer>) | undefined,
  ): Promise<void> {
    let answer: ChoiceAnswer = { kind: "refused", notice: UnknownChoiceText };
    try {
      if (handler !== undefined) {
        const channel = interaction.channel;
        const thread = channel?.isThread() === true ? channel : undefined;
        answer = await handler({
          profile,
          platform: "discord",
          chatId: thread?.parentId ?? interaction.channelId,
          threadId: thread?.id,
          messageId: interaction.message.id,
          userId: interaction.user.id,
          userName: interaction.user.globalName ?? interaction.user.username,
          data: interaction.customId,
        });
      }
      if (answer.kind !== "decided") {
        await interaction.reply({ content: answer.notice, flags: MessageFlags.Ephemeral });
        return;
      }
    } catch (error) {
      this.log.warn({ err: describeError(error) }, "could not answer a discord button press");
      return;
    }
    // An edit's mentions are parsed anew, every kind unless the edit says otherwise; the text
    // carries the agent's command line and the presser's name.
    const content = escapeMarkdown(answer.text);
    try {
      await interaction.update({ content, components: [], allowedMentions: { parse: [] } });
      return;
    } catch (error) {
      this.log.warn(
        { err: describeError(error) },
        "discord button press not answered through its interaction; editing its message instead",
      );
    }
    try {
      await this.rest.patch(Routes.channelMessage(interaction.channelId, interaction.message.id), {
        body: { content, components: [], allowed_mentions: { parse: [] } },
      });
    } catch (error) {
      this.log.error(
        { err: describeError(error) },
        "a decided discord question could not be closed; it still shows its buttons",
      );
    }
  }
}

/** Messages in a thread go to the thread's channel id; otherwise to the chat. */
function channelOf(target: ChatTarget): string {
  return target.threadId ?? target.chatId;
}
