import {
  Client,
  DefaultRestOptions,
  GatewayIntentBits,
  Partials,
  type REST,
  type RESTOptions,
} from "discord.js";
import { CallSignalRest } from "./rest.js";

/** What both discord.js objects need to reach Discord (or a local stand-in). */
export interface DiscordConnection {
  readonly token: string;
  /** REST root without the version, e.g. `https://discord.com/api`. */
  readonly apiRoot: string;
  /** Replaces the websocket URL `GET /gateway/bot` answers with. */
  readonly gatewayUrl?: string | undefined;
  readonly requestTimeoutMs: number;
}

/**
 * Guild messages, their content, and DMs. `Partials.Channel` is what lets discord.js emit
 * `messageCreate` for a DM channel it has never cached.
 */
export const DiscordIntents = [
  GatewayIntentBits.Guilds,
  GatewayIntentBits.GuildMessages,
  GatewayIntentBits.MessageContent,
  GatewayIntentBits.DirectMessages,
] as const;

/** Resolves when the next IDENTIFY may be sent; rejects when `signal` aborts. */
export type IdentifyWait = (signal: AbortSignal) => Promise<void>;

/**
 * The gateway client: receives messages. Its REST instance keeps discord.js's own handling
 * (it serves login, reconnects and cache fetches); replies go through {@link createDeliveryRest}.
 *
 * discord.js takes the websocket URL from `GET /gateway/bot`, so `gatewayUrl` is applied by
 * rewriting that one answer in `makeRequest` (discord.js's documented fetch hook). RESUME
 * then uses the `resume_gateway_url` of READY, as Discord asks clients to.
 *
 * `identifyWait` replaces discord.js's identify throttler (`ws.buildIdentifyThrottler`), which
 * lets one IDENTIFY through per 5 s (plus up to 1.5 s of jitter), as Discord requires.
 */
export function createGatewayClient(
  connection: DiscordConnection,
  identifyWait?: IdentifyWait,
): Client {
  const rest: Partial<RESTOptions> = {
    api: connection.apiRoot,
    timeout: connection.requestTimeoutMs,
  };
  const { gatewayUrl } = connection;
  if (gatewayUrl !== undefined) rest.makeRequest = withGatewayUrl(gatewayUrl);
  return new Client({
    intents: [...DiscordIntents],
    partials: [Partials.Channel],
    rest,
    ...(identifyWait === undefined
      ? {}
      : {
          ws: {
            buildIdentifyThrottler: () => ({
              waitForIdentify: (_shardId: number, signal: AbortSignal) => identifyWait(signal),
            }),
          },
        }),
  });
}

/**
 * The REST instance replies are sent with: discord.js does not retry anything here
 * (`retries: 0`, and every rate limit is thrown as a `RateLimitError` instead of slept on),
 * so the gateway's own retry policy is the single retry layer and decides about waits.
 */
export function createDeliveryRest(connection: DiscordConnection): REST {
  return new CallSignalRest({
    api: connection.apiRoot,
    timeout: connection.requestTimeoutMs,
    retries: 0,
    rejectOnRateLimit: () => true,
  }).setToken(connection.token);
}

function withGatewayUrl(gatewayUrl: string): RESTOptions["makeRequest"] {
  return async (url, init) => {
    const response = await DefaultRestOptions.makeRequest(url, init);
    if (!response.ok || !new URL(url).pathname.endsWith("/gateway/bot")) return response;
    const data = (await response.json()) as Record<string, unknown>;
    return new Response(JSON.stringify({ ...data, url: gatewayUrl }), {
      status: response.status,
      headers: { "content-type": "application/json" },
    });
  };
}
