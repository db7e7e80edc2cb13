/** The admin commands the gateway handles itself, ahead of the session queue. */
export type AdminCommand =
  | { readonly name: "stop"; readonly all: boolean }
  | { readonly name: "reset"; readonly confirm: boolean }
  | { readonly name: "status" };

/**
 * Recognizes `/stop`, `/stop all`, `/reset`, `/reset confirm` and `/status`
 * (case-insensitive, with an optional Telegram `@botname` suffix). Anything else — other
 * slash commands included — is a message for the agent.
 */
export function parseCommand(text: string): AdminCommand | undefined {
  const match = /^\/(stop|reset|status)(?:@[A-Za-z0-9_]+)?(?:\s+(\S+))?\s*$/i.exec(text.trim());
  if (match === null) return undefined;
  const name = match[1]!.toLowerCase();
  const arg = match[2]?.toLowerCase();
  if (name === "reset") {
    if (arg !== undefined && arg !== "confirm") return undefined;
    return { name, confirm: arg === "confirm" };
  }
  if (name === "stop") {
    if (arg !== undefined && arg !== "all") return undefined;
    return { name, all: arg === "all" };
  }
  if (arg !== undefined) return undefined;
  return { name: "status" };
}
