import type { AgentSettings } from "../config/types.js";
import type { Logger } from "../log.js";
import type { StateStore } from "../state/state-store.js";
import { OpenAIAgent } from "./openai.js";
import { ShellAgent } from "./shell.js";
import type { Agent } from "./types.js";

/** Builds the agent a profile's config names (docs/sessions.md). */
export function createAgent(
  settings: AgentSettings,
  deps: { store: StateStore; logger: Logger },
): Agent {
  if (settings.kind === "shell") {
    return new ShellAgent(
      settings.maxReplyChars === undefined ? {} : { maxReplyChars: settings.maxReplyChars },
    );
  }
  return new OpenAIAgent({
    models: settings.models,
    defaultModel: settings.defaultModel,
    fallback: settings.fallback,
    budget: settings.budget,
    maxToolRounds: settings.maxToolRounds,
    systemPrompt: settings.systemPrompt,
    vision: settings.vision,
    transcription: settings.transcription,
    store: deps.store,
    logger: deps.logger,
  });
}
