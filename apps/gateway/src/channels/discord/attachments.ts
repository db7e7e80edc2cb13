import { formatBytes } from "@mediagate/media";
import { type Attachment, type Message, MessageFlags } from "discord.js";
import { checkedAgainstAnnounced } from "../announced-size.js";
import {
  DownloadError,
  DownloadHosts,
  type DownloadResponse,
  httpDownload,
  type ResolveHost,
} from "../http-download.js";
import {
  AttachmentFetchError,
  type AttachmentFetcher,
  type AttachmentSentAs,
  type InboundAttachment,
} from "../types.js";

/**
 * A message's attachments as the core sees them (docs/inbound-media.md), in the order sent:
 * the file name, Discord's announced size and content type, and the CDN URL to fetch it by.
 * Nothing is downloaded here.
 */
export function inboundAttachmentsOf(
  message: Pick<Message, "attachments" | "flags">,
): InboundAttachment[] {
  const voice = message.flags.has(MessageFlags.IsVoiceMessage);
  return [...message.attachments.values()].map((attachment) => ({
    name: attachment.name,
    sentAs: voice ? "voice" : sentAsOf(attachment),
    size: attachment.size,
    mime: attachment.contentType ?? undefined,
    ref: attachment.url,
  }));
}

/** Discord has no per-kind upload: the content type it announced decides the label. */
function sentAsOf(attachment: Attachment): AttachmentSentAs {
  const type = attachment.contentType?.toLowerCase() ?? "";
  if (type.startsWith("image/")) return "photo";
  if (type.startsWith("video/")) return "video";
  if (type.startsWith("audio/")) return "audio";
  return "file";
}

/** Discord's CDN: where attachment URLs point (`url`, and `proxy_url` on the media proxy). */
export const DiscordCdnOrigins = ["https://cdn.discordapp.com", "https://media.discordapp.net"];

/** What {@link DiscordAttachmentFetcher} needs. */
export interface DiscordAttachmentFetcherOptions {
  /** The configured REST root (`discord.apiRoot`): a file host at any address, as the CDN's. */
  readonly apiRoot: string;
  /** How host names are resolved (default `dns.lookup`); tests map a name to their address. */
  readonly resolve?: ResolveHost | undefined;
  /** Largest attachment saved (`discord.downloadMaxBytes`). */
  readonly maxBytes: number;
  /**
   * How long the CDN may send nothing: until its answer's head, and then between the body's
   * chunks while they are waited for. A download that stalls is given up (a session's queue
   * waits on its files).
   */
  readonly stallTimeoutMs: number;
}

/**
 * Streams attachments from Discord's CDN (the attachment `url`). The URL is signed by
 * Discord and needs no token, so none is sent: the bot token never leaves for a URL a message
 * carried. Only http(s) URLs on Discord's CDN ({@link DiscordCdnOrigins}, public addresses
 * only) or on the configured `apiRoot`'s origin are fetched, redirects included
 * ({@link DownloadHosts}). The body is handed over chunk by chunk as it
 * arrives ({@link httpDownload}: each chunk a view of a buffer the next one reuses), never
 * buffered whole; the inbox counts the bytes and stops at `maxBytes`.
 */
export class DiscordAttachmentFetcher implements AttachmentFetcher {
  readonly maxBytes: number;
  readonly #stallTimeoutMs: number;
  readonly #hosts: DownloadHosts;

  constructor(options: DiscordAttachmentFetcherOptions) {
    this.maxBytes = options.maxBytes;
    this.#stallTimeoutMs = options.stallTimeoutMs;
    this.#hosts = new DownloadHosts({
      platform: "Discord",
      roots: [options.apiRoot],
      fileHosts: DiscordCdnOrigins,
      resolve: options.resolve,
    });
  }

  async open(
    attachment: InboundAttachment,
    signal: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array>> {
    let url: URL;
    try {
      url = new URL(attachment.ref);
    } catch {
      throw new AttachmentFetchError("Discord gave no usable address for it");
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") {
      throw new AttachmentFetchError("Discord gave no web address for it");
    }
    let response: DownloadResponse;
    try {
      // The caller's signal ends it at any point; the timer, whenever the CDN goes silent.
      // Only the waits for the network count: a slow inbox write is not a stall.
      response = await httpDownload(url, {
        signal,
        hosts: this.#hosts,
        headersTimeoutMs: this.#stallTimeoutMs,
        stallTimeoutMs: this.#stallTimeoutMs,
      });
    } catch (error) {
      throw new AttachmentFetchError(this.#reasonOf(error), { cause: error });
    }
    if (response.status < 200 || response.status > 299) {
      response.close();
      throw new AttachmentFetchError(
        response.status === 404 || response.status === 403
          ? "Discord no longer has it (the link expired or the message was deleted)"
          : `Discord's file server answered ${response.status}`,
      );
    }
    const length = response.length ?? Number.NaN;
    if (length > this.maxBytes) {
      response.close();
      throw new AttachmentFetchError(
        `it is ${formatBytes(length)}, over the ${formatBytes(this.maxBytes)} limit`,
      );
    }
    return checkedAgainstAnnounced(chunksOf(response), attachment.size, "Discord");
  }

  /** What the user is told of a download that failed before its answer's head. */
  #reasonOf(error: unknown): string {
    const failure = error instanceof DownloadError ? error.failure : undefined;
    if (failure === "timeout") {
      return `Discord's file server did not answer within ${Math.round(this.#stallTimeoutMs / 1000)} s`;
    }
    // Says which rule refused it, never the host or the address.
    if (failure === "refused" && error instanceof Error) return error.message;
    return "Discord's file server could not be reached";
  }
}

/**
 * The body's chunks as they arrive; giving up early closes the connection. A failure says
 * what happened (cut off, nothing arrived for a while), never where.
 */
async function* chunksOf(response: DownloadResponse): AsyncGenerator<Uint8Array> {
  try {
    yield* response.body;
  } catch (error) {
    const said = error instanceof DownloadError ? `: ${error.message}` : "";
    throw new AttachmentFetchError(`the download broke off${said}`, { cause: error });
  }
}
