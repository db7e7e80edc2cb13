import { contextTokensOf, type ModelAgentSettings, modelNamed } from "../agents/models.js";
import { safeHead } from "../agents/tools-text.js";
import type { ModelSettings } from "../config/types.js";
import type { StateStore } from "../state/state-store.js";
import { MaxShownChoiceChars } from "./parse.js";

/** What the model commands need of the state store. */
export type ModelStore = Pick<StateStore, "sessionModel" | "setSessionModel">;

/** Which models a user may pick: every entry for an admin, `memberModels` for a member. */
export function pickableModels(
  settings: ModelAgentSettings,
  admin: boolean,
): readonly ModelSettings[] {
  if (admin || settings.memberModels === undefined) return settings.models;
  const allowed = new Set(settings.memberModels);
  return settings.models.filter((entry) => allowed.has(entry.name));
}

/** The session's model: its `/model` pick while the config still has it, else the default. */
export async function currentModel(
  store: ModelStore,
  settings: ModelAgentSettings,
  sessionKey: string,
): Promise<ModelSettings> {
  const chosen = await store.sessionModel(sessionKey);
  return (
    (chosen === undefined ? undefined : modelNamed(settings, chosen)) ??
    modelNamed(settings, settings.defaultModel) ??
    settings.models[0]!
  );
}

/** How a pick went: switched (or already on it), no such entry, or not for this user. */
export type ModelChoice =
  | { readonly status: "switched"; readonly model: ModelSettings; readonly unchanged: boolean }
  | { readonly status: "unknown"; readonly name: string; readonly choices: readonly string[] }
  | { readonly status: "not_allowed"; readonly model: ModelSettings };

/**
 * Switches `sessionKey` to the entry named `name` (case-insensitive) when `admin` or
 * `memberModels` allow it, storing the pick (picking the default stores none, so the session
 * follows the config's default). The one place a pick is decided: the typed `/model <name>`
 * calls it, and so will a button's handler.
 */
export async function chooseModel(
  store: ModelStore,
  settings: ModelAgentSettings,
  sessionKey: string,
  name: string,
  admin: boolean,
): Promise<ModelChoice> {
  const pickable = pickableModels(settings, admin);
  const wanted = name.toLowerCase();
  const model = settings.models.find((entry) => entry.name.toLowerCase() === wanted);
  if (model === undefined) {
    return { status: "unknown", name, choices: pickable.map((entry) => entry.name) };
  }
  if (!pickable.includes(model)) return { status: "not_allowed", model };
  const before = await currentModel(store, settings, sessionKey);
  await store.setSessionModel(
    sessionKey,
    model.name === settings.defaultModel ? undefined : model.name,
  );
  return { status: "switched", model, unchanged: before.name === model.name };
}

/** The answer to a pick, for the chat. */
export function describeChoice(choice: ModelChoice): string {
  switch (choice.status) {
    case "switched":
      return choice.unchanged
        ? `This session already uses ${choice.model.name} (${choice.model.model}).`
        : `✅ This session now uses ${choice.model.name} (${choice.model.model}). The conversation goes on.`;
    case "unknown":
      return `No model is named "${safeHead(choice.name, MaxShownChoiceChars)}". Pick one of: ${choice.choices.join(", ")} (/model <name>).`;
    case "not_allowed":
      return `⛔ ${choice.model.name} is for admins only; nothing was changed. /model lists the ones you may pick.`;
  }
}

function formatPrice(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(2).replace(/0$/, "");
}

/** One entry's line: name, model id, context size and prices. */
export function modelLine(entry: ModelSettings): string {
  const context = `${Math.round(contextTokensOf(entry) / 1000)}k context`;
  const prices =
    entry.prices === undefined
      ? ""
      : `, ${formatPrice(entry.prices.input)} in / ${formatPrice(entry.prices.output)} out per M tokens`;
  return `${entry.name} — ${entry.model}, ${context}${prices}`;
}

/**
 * `/model` without a name: the session's model and the ones this user may pick, marked
 * (docs/models-and-usage.md). A clear text list for every platform; buttons join it later.
 */
export async function describeModels(
  store: ModelStore,
  settings: ModelAgentSettings,
  sessionKey: string,
  admin: boolean,
): Promise<string> {
  const current = await currentModel(store, settings, sessionKey);
  const pickable = pickableModels(settings, admin);
  const fallback = settings.fallback.filter((name) => name !== current.name);
  return [
    `Model of this session: ${current.name} (${current.model})${current.name === settings.defaultModel ? ", the default" : ""}.`,
    pickable.length === 0 ? "You may not pick another model." : "You may pick:",
    ...pickable.map((entry) => `  ${entry.name === current.name ? "•" : "◦"} ${modelLine(entry)}`),
    ...(pickable.length === 0 ? [] : ["Switch with /model <name>; the conversation goes on."]),
    ...(fallback.length === 0 ? [] : [`When it fails: ${fallback.join(", then ")}.`]),
  ].join("\n");
}
