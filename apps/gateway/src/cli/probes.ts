import { TelegramChannelDefaults } from "../channels/telegram/options.js";
import type {
  AgentSettings,
  DiscordSettings,
  ModelSettings,
  TelegramSettings,
} from "../config/types.js";
import { Defaults } from "../defaults.js";
import type { CheckResult } from "./preflight.js";

/** Bounds of `mediagate doctor`'s network probes. */
export const ProbeDefaults = Defaults.probes satisfies Record<string, number>;

/** What a probe needs besides the settings it checks. */
export interface ProbeOptions {
  readonly timeoutMs: number;
}

/** An HTTP answer as far as the probes read it. */
interface Answer {
  readonly status: number;
  readonly statusText: string;
  readonly body: unknown;
}

/**
 * Where a URL points, for messages: scheme, host, port and path, never credentials or a
 * query. Tokens in the path (the Bot API's `/bot<token>/`) are never passed here.
 */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const path = parsed.pathname === "/" ? "" : parsed.pathname.replace(/\/+$/, "");
    return `${parsed.origin}${path}`;
  } catch {
    return "(not a URL)";
  }
}

/**
 * Why a request got no answer, in a few words. `secrets` (the URL, which may hold a token, and
 * the header values) are cut out: fetch names the URL or a header it could not use.
 */
function transportFailure(error: unknown, timeoutMs: number, secrets: readonly string[]): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) {
    return `no answer within ${timeoutMs} ms`;
  }
  const cause = error instanceof Error ? error.cause : undefined;
  let said =
    cause instanceof Error && cause.message !== ""
      ? cause.message
      : error instanceof Error
        ? error.message
        : String(error);
  for (const secret of secrets) if (secret !== "") said = said.split(secret).join("<redacted>");
  return said;
}

/**
 * GET `url`, bounded by `timeoutMs` (headers and body together). Resolves with the status and
 * the JSON body (`undefined` when it is not JSON); rejects with a short reason when nothing
 * usable came back. The URL never appears in the reason.
 */
export async function getJson(
  url: string,
  headers: Readonly<Record<string, string>>,
  timeoutMs: number,
): Promise<Answer> {
  try {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: response.status, statusText: response.statusText, body };
  } catch (error) {
    throw new Error(transportFailure(error, timeoutMs, [url, ...Object.values(headers)]));
  }
}

/** `value[name]` when `value` is an object. */
export function field(value: unknown, name: string): unknown {
  return typeof value === "object" && value !== null
    ? (value as Record<string, unknown>)[name]
    : undefined;
}

/** A non-empty string value, cut at 200 characters. */
export function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value.slice(0, 200) : undefined;
}

/** `401 Unauthorized`, with the platform's own description when it differs. */
function statusLine(answer: Answer, description: string | undefined): string {
  const base = `${answer.status}${answer.statusText === "" ? "" : ` ${answer.statusText}`}`;
  // Discord says "401: Unauthorized": the status is already there.
  const own = description?.replace(/^\d{3}:?\s*/, "");
  return own === undefined || own === "" || base.endsWith(own) ? base : `${base}: ${own}`;
}

/**
 * Telegram: `getMe` with the profile's token through its `apiRoot`, as grammY calls it. A
 * refused token (401, or 404 for one the Bot API does not recognise) says where to get one.
 */
export async function probeTelegram(
  profile: string,
  settings: TelegramSettings,
  options: ProbeOptions,
): Promise<CheckResult> {
  const name = `telegram (${profile})`;
  const apiRoot = (settings.apiRoot ?? TelegramChannelDefaults.apiRoot).replace(/\/+$/, "");
  const where = displayUrl(apiRoot);
  let answer: Answer;
  try {
    answer = await getJson(`${apiRoot}/bot${settings.token}/getMe`, {}, options.timeoutMs);
  } catch (error) {
    return {
      name,
      ok: false,
      detail: `no answer from ${where} (${(error as Error).message})`,
      fix: "check the network (or proxy) to the Bot API, or telegram.apiRoot",
    };
  }
  const result = field(answer.body, "result");
  if (answer.status === 200 && field(answer.body, "ok") === true) {
    const username = text(field(result, "username")) ?? "?";
    return { name, ok: true, detail: `bot @${username} (id ${String(field(result, "id"))})` };
  }
  const said = statusLine(answer, text(field(answer.body, "description")));
  if (answer.status === 401 || answer.status === 404) {
    return {
      name,
      ok: false,
      detail: `token refused by ${where} (${said})`,
      fix: "set telegram.token (TELEGRAM_BOT_TOKEN for the first profile) to the token @BotFather gives for the bot (/mybots → API Token)",
    };
  }
  return {
    name,
    ok: false,
    detail: `getMe failed at ${where} (${said})`,
    fix: "try again later; if it persists, check telegram.apiRoot",
  };
}

/**
 * Discord: `GET /users/@me` with the profile's bot token through its REST root, as
 * discord.js calls it (`<apiRoot>/v10/users/@me`).
 */
export async function probeDiscord(
  profile: string,
  settings: DiscordSettings,
  options: ProbeOptions,
): Promise<CheckResult> {
  const name = `discord (${profile})`;
  const apiRoot = (settings.apiRoot ?? Defaults.discord.apiRoot).replace(/\/+$/, "");
  const where = displayUrl(apiRoot);
  let answer: Answer;
  try {
    answer = await getJson(
      `${apiRoot}/v10/users/@me`,
      { authorization: `Bot ${settings.token}` },
      options.timeoutMs,
    );
  } catch (error) {
    return {
      name,
      ok: false,
      detail: `no answer from ${where} (${(error as Error).message})`,
      fix: "check the network (or proxy) to Discord, or discord.apiRoot",
    };
  }
  if (answer.status === 200) {
    const username = text(field(answer.body, "username")) ?? "?";
    return { name, ok: true, detail: `bot ${username} (id ${String(field(answer.body, "id"))})` };
  }
  const said = statusLine(answer, text(field(answer.body, "message")));
  if (answer.status === 401) {
    return {
      name,
      ok: false,
      detail: `token refused by ${where} (${said})`,
      fix: "set discord.token (DISCORD_BOT_TOKEN for the first profile) to the bot's token from the developer portal (Bot → Reset Token)",
    };
  }
  return {
    name,
    ok: false,
    detail: `/users/@me failed at ${where} (${said})`,
    fix: "try again later; if it persists, check discord.apiRoot",
  };
}

/** The model ids a `/models` answer lists (`{ data: [{ id }] }`). */
function modelIds(body: unknown): string[] {
  const data = field(body, "data");
  if (!Array.isArray(data)) return [];
  return data
    .map((entry) => field(entry, "id"))
    .filter((id): id is string => typeof id === "string");
}

/** Ollama lists `name:latest` for a model asked for as `name`. */
function serves(ids: readonly string[], model: string): boolean {
  return ids.includes(model) || ids.includes(`${model}:latest`);
}

/**
 * The agent's endpoints: for an OpenAI-compatible agent, `GET <baseUrl>/models` of each
 * `agent.models` entry (with its API key when one is set), which also says whether the entry's
 * model is served. Empty for agents without an endpoint (the shell agent).
 */
export function probeAgent(
  profile: string,
  agent: AgentSettings,
  options: ProbeOptions,
): Promise<CheckResult>[] {
  if (agent.kind !== "openai") return [];
  const several = agent.models.length > 1;
  return agent.models.map((entry) =>
    probeModel(
      several ? `agent (${profile}, ${entry.name})` : `agent (${profile})`,
      entry,
      options,
    ),
  );
}

async function probeModel(
  name: string,
  agent: ModelSettings,
  options: ProbeOptions,
): Promise<CheckResult> {
  const baseUrl = agent.baseUrl.replace(/\/+$/, "");
  const where = displayUrl(baseUrl);
  const apiKey: string | undefined = agent.apiKey;
  const headers: Record<string, string> =
    apiKey === undefined || apiKey === "" ? {} : { authorization: `Bearer ${apiKey}` };
  let answer: Answer;
  try {
    answer = await getJson(`${baseUrl}/models`, headers, options.timeoutMs);
  } catch (error) {
    return {
      name,
      ok: false,
      detail: `nothing answers at ${where} (${(error as Error).message})`,
      fix: "start the model server (e.g. ollama serve, vllm serve <model>) or correct agent.baseUrl",
    };
  }
  const said = statusLine(answer, text(field(field(answer.body, "error"), "message")));
  if (answer.status === 401 || answer.status === 403) {
    return {
      name,
      ok: false,
      detail: `API key refused by ${where} (${said})`,
      fix: `set agent.apiKey to a key the server accepts (e.g. apiKey: "\${OPENAI_API_KEY}" to take it from the environment)`,
    };
  }
  if (answer.status === 404) {
    return {
      name,
      ok: false,
      detail: `${where}/models not found (${said})`,
      fix: "agent.baseUrl is the API root that ends in /v1, e.g. http://127.0.0.1:11434/v1 for Ollama",
    };
  }
  if (answer.status !== 200) {
    return {
      name,
      ok: false,
      detail: `${where}/models failed (${said})`,
      fix: "check the model server's own log",
    };
  }
  const ids = modelIds(answer.body);
  if (ids.length === 0) {
    return {
      name,
      ok: true,
      detail: `${where} answers; it lists no models, so model ${agent.model} is not checked`,
    };
  }
  if (!serves(ids, agent.model)) {
    const listed = ids.slice(0, 8).join(", ") + (ids.length > 8 ? ", …" : "");
    return {
      name,
      ok: false,
      detail: `${where} does not serve model ${agent.model} (it lists ${listed})`,
      fix: "set agent.model to a listed one, or load the model into the server (e.g. ollama pull <model>)",
    };
  }
  return { name, ok: true, detail: `${where} serves model ${agent.model}` };
}
