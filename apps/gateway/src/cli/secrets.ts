import type { GatewayConfig } from "../config/types.js";

/** Every secret value of a config (bot tokens, API keys), for log redaction. */
export function secretsOf(config: GatewayConfig): string[] {
  const out: string[] = [];
  for (const p of config.profiles) {
    if (p.telegram) out.push(p.telegram.token);
    if (p.discord) out.push(p.discord.token);
    if (p.agent.kind === "openai") out.push(p.agent.apiKey);
  }
  return out;
}
