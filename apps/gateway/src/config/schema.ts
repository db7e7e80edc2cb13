import {
  isLoopbackHost,
  ListenAddressError,
  parseHostName,
  parseListenAddress,
} from "@mediagate/io";
import {
  bindsSandboxMount,
  RegistryMountPoint,
  ScratchMountPoints,
  SlotMountPoints,
} from "@mediagate/sandbox/mount-points";
import { z } from "zod";
import { WebhookSecretPattern, webhookUrlAllowed } from "../channels/telegram/webhook-settings.js";
import { LogLevels } from "../log-levels.js";
import { approvalsSchema } from "./approvals-schema.js";
import { clusterSchema } from "./cluster-schema.js";
import { ConfigDefaults, ProfileNamePattern } from "./defaults.js";
import { timerSeconds } from "./durations.js";
import { schedulesSchema } from "./schedules-schema.js";
import { storeSchema } from "./store-schema.js";

const positiveInt = z.number().int().positive();
/** Smallest per-slot disk ceiling: an ext4 image needs room for its own metadata. */
const MinDiskLimitBytes = 16 * 1024 * 1024;
/**
 * `<platform>:<id>` as the gateway compares it with each message's sender: Telegram and Discord
 * ids are numbers written plainly (a Telegram channel's is negative), so `telegram:007` or
 * `telegram:@ada` could never match anyone and would let nobody in without a word.
 */
const userId = z.string().regex(/^(telegram:-?[1-9][0-9]*|discord:[1-9][0-9]*|console:[^:\s]+)$/, {
  error:
    'a user id "<platform>:<id>": telegram:<number> or discord:<number>, the number written plainly (e.g. telegram:123456; the refusal line the bot sends a user names theirs), or console:<name>',
});
/**
 * An http(s) or ws(s) URL. The scheme is checked: `localhost:11434/v1` is a URL to WHATWG (of
 * the scheme `localhost`) and would fail only when first fetched.
 */
const url = z.url({ protocol: /^(https?|wss?)$/, error: "an http(s) or ws(s) URL" });

/** `telegram.commands` / `discord.commands` (docs/sessions.md, "Command menus"). */
const commandsSchema = z.strictObject({ register: z.boolean().optional() });

/** `telegram.webhook` (docs/telegram-webhooks.md); checked again by the channel. */
const telegramWebhookSchema = z.strictObject({
  url: z
    .url({ error: "the public https URL Telegram posts updates to" })
    .refine(webhookUrlAllowed, {
      error:
        'an https URL (http only for a loopback host: a local Bot API server or tests), e.g. "https://bot.example.org/telegram"',
    }),
  listen: listenAddress().optional(),
  secretToken: z.string().regex(WebhookSecretPattern, {
    error:
      "1-256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule), e.g. ${TELEGRAM_WEBHOOK_SECRET}",
  }),
  maxConnections: z
    .number()
    .int()
    .min(1)
    .max(100, { error: "a whole number from 1 to 100" })
    .optional(),
  certificate: z.string().min(1, { error: "the path of the public certificate (PEM)" }).optional(),
});

const TelegramChatIdError = "a chat id: digits, negative for a group (e.g. -1001234567890)";
const telegramSchema = z.strictObject({
  token: z.string().min(1, { error: "a non-empty bot token" }).optional(),
  apiRoot: url.optional(),
  photoMaxBytes: positiveInt.optional(),
  uploadMaxBytes: positiveInt.optional(),
  pollTimeoutSeconds: timerSeconds().optional(),
  downloadMaxBytes: positiveInt.optional(),
  localFiles: z.boolean().optional(),
  commands: commandsSchema.optional(),
  webhook: telegramWebhookSchema.optional(),
  groups: z
    .strictObject({
      requireMention: z.boolean().optional(),
      allowedChats: z
        .array(
          z.union(
            [
              z.number({ error: TelegramChatIdError }).int(),
              z.string().regex(/^-?\d+$/, { error: TelegramChatIdError }),
            ],
            {
              error: TelegramChatIdError,
            },
          ),
        )
        .optional(),
    })
    .optional(),
});

/** Discord ids pass 2^53: as YAML numbers they would be rounded, so they are strings. */
const DiscordChannelIdError = 'a channel id in quotes (e.g. "123456789012345678")';
const discordSchema = z.strictObject({
  token: z.string().min(1, { error: "a non-empty bot token" }).optional(),
  apiRoot: url.optional(),
  gatewayUrl: url.optional(),
  channels: z.array(z.string().regex(/^\d+$/, { error: "a channel id (digits)" })).optional(),
  allowedChannels: z.array(z.string().regex(/^\d+$/, { error: DiscordChannelIdError })).optional(),
  uploadMaxBytes: positiveInt.optional(),
  downloadMaxBytes: positiveInt.optional(),
  catchUpMaxMessages: z
    .number()
    .int()
    .min(0, { error: "0 (off) or a number of messages" })
    .optional(),
  commands: commandsSchema.optional(),
});

const apiKey = z
  .string()
  .min(1, { error: "a non-empty API key (leave apiKey out for a server that needs none)" });

/** A name `/model <name>` can be typed with. */
const ModelNamePattern = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}$/;
const modelName = z.string().regex(ModelNamePattern, {
  error: 'a model entry name: letters, digits and . _ : / - (e.g. "main", "claude-sonnet")',
});
const price = z.number().min(0, { error: "a price per million tokens, 0 or more" });

/** One entry of `agent.models` (docs/models-and-usage.md). */
const modelEntrySchema = z.strictObject({
  name: modelName,
  baseUrl: url,
  apiKey: apiKey.optional(),
  model: z.string().min(1, { error: "a model name" }),
  contextTokens: positiveInt.optional(),
  prices: z.strictObject({ input: price, output: price, cachedInput: price.optional() }).optional(),
  timeoutSeconds: timerSeconds().optional(),
});

const openaiAgentSchema = z
  .strictObject({
    kind: z.literal("openai"),
    approvals: approvalsSchema.optional(),
    baseUrl: url.optional(),
    apiKey: apiKey.optional(),
    model: z.string().min(1, { error: "a model name" }).optional(),
    models: z.array(modelEntrySchema).min(1, { error: "at least one model entry" }).optional(),
    default: modelName.optional(),
    fallback: z.array(modelName).optional(),
    memberModels: z.array(modelName).optional(),
    budget: z
      .strictObject({
        dailyTokens: positiveInt.optional(),
        dailyCost: z.number().positive({ error: "a cost per day, more than 0" }).optional(),
      })
      .optional(),
    maxToolRounds: positiveInt.optional(),
    contextTokens: positiveInt.optional(),
    systemPrompt: z.string().min(1, { error: "instructions for the model" }).optional(),
    vision: z.boolean().optional(),
    transcription: z
      .strictObject({
        baseUrl: url,
        model: z.string().min(1, { error: "a transcription model name" }),
        apiKey: apiKey.optional(),
      })
      .optional(),
  })
  .superRefine((agent, ctx) => {
    checkModelList(agent, ctx);
    checkCostBudget(agent, ctx);
  });

/**
 * A cost budget needs a model with prices: a call's cost comes from its entry's `prices`, so
 * without any (the single-model form has none) every call costs 0 and the budget would never
 * stop one, silently. An entry without prices among priced ones is a free model (a local one).
 */
function checkCostBudget(
  agent: {
    budget?: { dailyCost?: number | undefined } | undefined;
    models?: readonly { prices?: unknown }[] | undefined;
  },
  ctx: z.RefinementCtx,
): void {
  if (agent.budget?.dailyCost === undefined) return;
  if (agent.models?.some((entry) => entry.prices !== undefined) === true) return;
  ctx.addIssue({
    code: "custom",
    path: ["budget", "dailyCost"],
    message:
      agent.models === undefined
        ? "a models list whose entries have prices: without prices every call costs 0 and this budget would never stop one (or budget.dailyTokens)"
        : "prices on the models entries: without prices every call costs 0 and this budget would never stop one (or budget.dailyTokens)",
  });
}

/** Either the single-model form or `models`, and every name given refers to an entry. */
function checkModelList(
  agent: {
    baseUrl?: string | undefined;
    model?: string | undefined;
    apiKey?: string | undefined;
    contextTokens?: number | undefined;
    models?: readonly { name: string }[] | undefined;
    default?: string | undefined;
    fallback?: readonly string[] | undefined;
    memberModels?: readonly string[] | undefined;
  },
  ctx: z.RefinementCtx,
): void {
  const single = agent.baseUrl !== undefined || agent.model !== undefined;
  if (agent.models === undefined) {
    if (agent.baseUrl === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["baseUrl"],
        message: "an http(s) URL, or a models list",
      });
    if (agent.model === undefined)
      ctx.addIssue({ code: "custom", path: ["model"], message: "a model name, or a models list" });
    for (const key of ["default", "fallback", "memberModels"] as const) {
      if (agent[key] !== undefined)
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: "names of models entries: add a models list",
        });
    }
    return;
  }
  if (single || agent.apiKey !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["models"],
      message: "either models or baseUrl/model/apiKey, not both: move them into a models entry",
    });
  }
  if (agent.contextTokens !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["contextTokens"],
      message: "a models entry's contextTokens: with a models list, each entry has its own size",
    });
  }
  const names = agent.models.map((entry) => entry.name);
  // `/model <name>` matches names case-insensitively: two that differ only in case would be one.
  const folded = names.map((name) => name.toLowerCase());
  names.forEach((name, index) => {
    const first = folded.indexOf(folded[index]!);
    if (first === index) return;
    ctx.addIssue({
      code: "custom",
      path: ["models", index, "name"],
      message:
        names[first] === name
          ? `a unique name ("${name}" is used twice)`
          : `a unique name, whatever its case ("${names[first]}" is used already: /model ${name.toLowerCase()} could not tell them apart)`,
    });
  });
  const known = `one of the models entries (${names.join(", ")})`;
  if (agent.default !== undefined && !names.includes(agent.default))
    ctx.addIssue({ code: "custom", path: ["default"], message: known });
  for (const key of ["fallback", "memberModels"] as const) {
    agent[key]?.forEach((name, index) => {
      if (!names.includes(name))
        ctx.addIssue({ code: "custom", path: [key, index], message: known });
    });
  }
}

const agentSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("shell"),
    maxReplyChars: positiveInt.optional(),
    approvals: approvalsSchema.optional(),
  }),
  openaiAgentSchema,
]);

/** Below this `/run/mediagate` could not hold the sessions' shell state and uid registry. */
const MinScratchBytes = 1024 * 1024;

/** Below this a session could not even run its shell, a command and a kill exec. */
const SessionProcessLimitMin = 8;
/** Most warm containers a profile may keep waiting: each holds memory and a slot directory. */
const WarmPoolMax = 32;

const volumeSpec = z
  .string()
  .regex(/^\/[^:]*:\/[^:]*(:(ro|rw))?$/, {
    error: 'a volume "/host/path:/container/path[:ro|rw]"',
  })
  .refine((volume) => !bindsSandboxMount(volume), {
    error: `a volume at a container path of its own: not ${SlotMountPoints.join(" or ")} (the slot's directories), nor ${ScratchMountPoints.join(", ")} or below ${RegistryMountPoint} (the tmpfs mounts of sandbox.scratchBytes)`,
  });

const sandboxSchema = z.strictObject({
  image: z.string().min(1, { error: "an image reference" }).optional(),
  persistent: z.boolean().optional(),
  filesystem: z.enum(["bind", "tmpfs"], { error: 'a filesystem: "bind" or "tmpfs"' }).optional(),
  persistAcrossProcesses: z.boolean().optional(),
  orphanReaper: z.boolean().optional(),
  lifetimeSeconds: timerSeconds().optional(),
  network: z.string().min(1, { error: "a Docker network mode" }).optional(),
  memoryBytes: positiveInt.optional(),
  nanoCpus: positiveInt.optional(),
  pidsLimit: positiveInt.optional(),
  maxOpenShells: positiveInt.optional(),
  shellChannel: z.enum(["auto", "exec"], { error: 'a shell channel: "auto" or "exec"' }).optional(),
  warmPool: z
    .number()
    .int({ error: "a whole number of containers" })
    .min(0, { error: "a whole number of containers, 0 to turn the warm pool off" })
    .max(WarmPoolMax, {
      error: `at most ${WarmPoolMax} containers (each holds memory and a slot directory while it waits)`,
    })
    .optional(),
  tmpfsBytes: positiveInt.optional(),
  scratchBytes: z
    .number()
    .int()
    .min(MinScratchBytes, {
      error: `a whole number of bytes, at least ${MinScratchBytes} (1 MiB: the sessions' shell state lives there)`,
    })
    .optional(),
  diskLimitBytes: z
    .number()
    .int()
    .refine((n) => n === 0 || n >= MinDiskLimitBytes, {
      error: `0 (no disk ceiling) or at least ${MinDiskLimitBytes} bytes (16 MiB)`,
    })
    .optional(),
  volumes: z.array(volumeSpec).optional(),
  sharedKey: z.string().optional(),
  user: z
    .enum(["per-session", "root"], { error: 'a user mode: "per-session" or "root"' })
    .optional(),
  sessionProcessLimit: z
    .number()
    .int({ error: "a whole number of processes" })
    .min(SessionProcessLimitMin, {
      error: `a whole number of processes, at least ${SessionProcessLimitMin} (a session's shell, its command and the gateway's kill need a few)`,
    })
    .optional(),
});

const profileSchema = z.strictObject({
  name: z.string().regex(ProfileNamePattern, {
    error: `a profile name matching ${ProfileNamePattern.source}`,
  }),
  telegram: telegramSchema.optional(),
  discord: discordSchema.optional(),
  allowedUsers: z.array(userId).optional(),
  admins: z.array(userId).optional(),
  access: z
    .enum(["allowlist", "pairing"], {
      error:
        'an access mode: "allowlist" (only allowedUsers and admins) or "pairing" (also users an admin approves with a code)',
    })
    .optional(),
  pairing: z
    .strictObject({
      codeTtlSeconds: z
        .number()
        .int()
        .min(60, { error: "a whole number of seconds, at least 60" })
        .optional(),
      maxPendingCodes: positiveInt.optional(),
      maxFailedApprovals: positiveInt.optional(),
      lockSeconds: positiveInt.optional(),
    })
    .optional(),
  agent: agentSchema.optional(),
  format: z
    .enum(["markdown", "plain"], {
      error:
        'a format: "markdown" (render the agent\'s Markdown) or "plain" (show the text as written)',
    })
    .optional(),
  sandbox: sandboxSchema.optional(),
  media: z.strictObject({ allowDirs: z.array(z.string()).optional() }).optional(),
  groupSessionsPerUser: z.boolean().optional(),
  threadSessionsPerUser: z.boolean().optional(),
  stillWorkingAfterSeconds: timerSeconds().optional(),
  busyMode: z
    .enum(["queue", "interrupt", "collect"], {
      error:
        'a busy mode: "queue" (wait), "interrupt" (stop the running turn) or "collect" (merge into one turn)',
    })
    .optional(),
  maxQueuedMessages: positiveInt.optional(),
  progress: z
    .strictObject({
      enabled: z.boolean().optional(),
      afterSeconds: timerSeconds().optional(),
      everySeconds: timerSeconds().optional(),
    })
    .optional(),
  reactions: z
    .strictObject({
      enabled: z.boolean().optional(),
      groups: z.boolean().optional(),
      afterMs: z.number().int().min(0).max(60_000).optional(),
    })
    .optional(),
  schedules: schedulesSchema.optional(),
  stream: z
    .enum(["off", "draft", "edit", "auto"], {
      error:
        'a stream mode: "auto" (drafts in Telegram private chats, an edited message elsewhere), "draft", "edit" or "off"',
    })
    .optional(),
});

/**
 * A `host:port` as @mediagate/io's `parseListenAddress` reads it (the servers parse it with
 * the same function): an IPv6 host in brackets, a port from 0 to 65535. `loopback` also
 * refuses a host that is not a loopback address, saying `loopbackHint`.
 */
function listenAddress(loopback?: { readonly loopbackHint: string }) {
  return z.string().superRefine((value, ctx) => {
    let host: string;
    try {
      host = parseListenAddress(value).host;
    } catch (error) {
      if (!(error instanceof ListenAddressError)) throw error;
      ctx.addIssue({ code: "custom", message: error.expected });
      return;
    }
    if (loopback !== undefined && !isLoopbackHost(host)) {
      ctx.addIssue({ code: "custom", message: loopback.loopbackHint });
    }
  });
}

/** `host:port` on a loopback address (the health endpoint is not meant for the network). */
const loopbackListen = listenAddress({
  loopbackHint: 'a loopback "host:port", e.g. "127.0.0.1:9464" or "[::1]:9464"',
});

/**
 * The web console's `host:port` (docs/web-console.md): any host, but one that is not a
 * loopback address is a choice the gateway warns about at start-up.
 */
const webListen = listenAddress();

/** `web.allowedHosts`: the names browsers reach the console by (docs/web-console.md). */
const webAllowedHosts = z.array(
  z.string().refine((name) => parseHostName(name) !== undefined, {
    error: 'a host name without port: "gateway.example.org", "192.168.1.20" or "[fd00::20]"',
  }),
);

const deliverySchema = z.strictObject({
  ambiguousSends: z
    .enum(["at-most-once", "at-least-once"], {
      error: 'a policy: "at-most-once" (never send twice) or "at-least-once" (never lose)',
    })
    .optional(),
  maxAttempts: positiveInt.optional(),
  maxAgeSeconds: positiveInt.optional(),
  maxTextChunks: positiveInt.optional(),
});

/** Raw shape of `mediagate.yaml` (before defaults); unknown keys are errors (typo guard). */
export const configFileSchema = z.strictObject({
  home: z.string().min(1, { error: "a directory path" }).optional(),
  profiles: z.array(profileSchema).min(1, { error: "at least one profile" }).optional(),
  concurrency: positiveInt.optional(),
  drainTimeoutSeconds: timerSeconds().optional(),
  delivery: deliverySchema.optional(),
  recovery: z.strictObject({ rerunInterrupted: z.boolean().optional() }).optional(),
  health: z.strictObject({ listen: loopbackListen }).optional(),
  web: z
    .strictObject({ listen: webListen.optional(), allowedHosts: webAllowedHosts.optional() })
    .optional(),
  log: z.strictObject({ level: z.enum(LogLevels).optional() }).optional(),
  store: storeSchema.optional(),
  cluster: clusterSchema.optional(),
});

/** What the config file may contain, as parsed. */
export type ConfigFile = z.infer<typeof configFileSchema>;
/** One profile entry of the config file, as parsed. */
export type ProfileFile = z.infer<typeof profileSchema>;

export { ConfigDefaults };
