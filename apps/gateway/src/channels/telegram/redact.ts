/** The token segment of a Bot API URL: `/bot123456:AA…/` (also `/file/bot…`). */
const BotUrlSegment = /\/bot\d+:[A-Za-z0-9_-]+/g;

/**
 * Removes a bot token from text: the exact token wherever it appears, and any
 * `/bot<id>:<secret>` URL segment (another profile's token, a token with odd characters).
 */
export function redactToken(text: string, token: string): string {
  let out = token.length > 0 ? text.split(token).join("<token>") : text;
  out = out.replace(BotUrlSegment, "/bot<token>");
  return out;
}
