import type { Api } from "grammy";
import type { BotCommand, BotCommandScope } from "grammy/types";
import type { Logger } from "pino";
import { type MenuOffer, menuFor } from "../../commands/menu.js";
import { TelegramDeliveryError } from "./errors.js";
import { grammySignal } from "./send-media.js";
import type { TelegramCaller } from "./sender.js";

/** `commands` of {@link TelegramChannelOptions}: the command menus (docs/sessions.md). */
export interface TelegramCommandOptions {
  /** Register the menus at start-up; default true. */
  readonly register?: boolean | undefined;
  /** The admins' user ids (a private chat's id is its user's id): they get the admin menu. */
  readonly adminChatIds?: readonly string[] | undefined;
  /**
   * What the profile offers (its agent, approvals, pairing): the commands listed. Default: the
   * shell agent without approvals or pairing.
   */
  readonly offer?: MenuOffer | undefined;
}

/** One `setMyCommands` call: where the menu shows and what it holds. */
export interface MenuScope {
  readonly scope: BotCommandScope;
  readonly commands: readonly BotCommand[];
}

/**
 * The menus, one `setMyCommands` each (docs/sessions.md, "Command menus"): the `default`
 * scope (every private chat and group) lists what everyone allowed may use; each admin's
 * private chat (`chat` scope, which Telegram prefers over `default` there) lists the admin
 * commands too. What both list depends on what the profile offers (`menuFor`).
 */
export function telegramMenus(adminChatIds: readonly string[], offer: MenuOffer): MenuScope[] {
  const list = (admin: boolean): BotCommand[] =>
    menuFor(admin, offer).map((command) => ({
      command: command.name,
      description: command.description,
    }));
  return [
    { scope: { type: "default" }, commands: list(false) },
    ...[...new Set(adminChatIds)].map(
      (chatId): MenuScope => ({
        scope: { type: "chat", chat_id: Number(chatId) },
        commands: list(true),
      }),
    ),
  ];
}

/** What {@link registerTelegramMenus} needs of the channel. */
export interface MenuRegistration {
  readonly api: Api;
  readonly caller: TelegramCaller;
  readonly logger: Logger;
  readonly signal: AbortSignal;
}

/**
 * Sets each menu through the caller's retry policy (bounded attempts, flood waits honoured).
 * A menu that cannot be set is logged as a warning and the others go on: the commands still
 * work when typed. Resolves with the admin chats whose menu failed; never rejects.
 */
export async function registerTelegramMenus(
  menus: readonly MenuScope[],
  { api, caller, logger, signal }: MenuRegistration,
): Promise<string[]> {
  const failed: string[] = [];
  for (const menu of menus) {
    if (signal.aborted) break;
    const chatId = menu.scope.type === "chat" ? String(menu.scope.chat_id) : "-";
    try {
      await caller.call(
        "setMyCommands",
        chatId,
        (attemptSignal) =>
          api.setMyCommands([...menu.commands], { scope: menu.scope }, grammySignal(attemptSignal)),
        { idempotent: true, signal },
      );
      logger.info(
        { scope: menu.scope.type, chatId, commands: menu.commands.map((c) => c.command) },
        "telegram command menu registered",
      );
    } catch (error) {
      if (signal.aborted) break;
      if (chatId !== "-") failed.push(chatId);
      logger.warn(
        {
          scope: menu.scope.type,
          chatId,
          ...(error instanceof TelegramDeliveryError
            ? { status: error.facts.status, description: error.facts.description }
            : { description: error instanceof Error ? error.name : "error" }),
        },
        "telegram command menu not registered; the commands still work when typed",
      );
    }
  }
  return failed;
}
