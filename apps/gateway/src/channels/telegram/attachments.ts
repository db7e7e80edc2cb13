import type { FileHandle } from "node:fs/promises";
import { isAbsolute } from "node:path";
import { formatBytes } from "@mediagate/media";
import type { Api } from "grammy";
import type { File } from "grammy/types";
import type { Logger } from "pino";
import { redactText } from "../../redact.js";
import { checkedAgainstAnnounced } from "../announced-size.js";
import { fileChunks, openRegularFile } from "../file-chunks.js";
import {
  DownloadError,
  DownloadHosts,
  type DownloadResponse,
  httpDownload,
} from "../http-download.js";
import { AttachmentFetchError, type AttachmentFetcher, type InboundAttachment } from "../types.js";
import { TelegramDeliveryError } from "./errors.js";
import { grammySignal } from "./send-media.js";
import type { TelegramCaller } from "./sender.js";

/** What {@link TelegramFileFetcher} is built with. */
export interface TelegramFileFetcherOptions {
  readonly api: Api;
  readonly caller: TelegramCaller;
  readonly token: string;
  /** The Bot API root (no trailing slash); files are at `<apiRoot>/file/bot<token>/<file_path>`. */
  readonly apiRoot: string;
  readonly logger: Logger;
  readonly maxBytes: number;
  /** getFile answers absolute paths on this host (telegram-bot-api `--local`). */
  readonly localFiles: boolean;
  /**
   * A download that sends nothing for this long (its headers, or the next chunk once the
   * last one was taken) is given up.
   */
  readonly stallTimeoutMs: number;
}

/** The public Bot API's answer to getFile for a file over its 20 MB limit. */
const TooBig = /file is too big/i;

/**
 * The Telegram channel's inbound files (docs/inbound-media.md): `getFile` through grammY's
 * `Api` (so `apiRoot` is honoured, with the channel's retry policy), then the file streamed
 * from `<apiRoot>/file/bot<token>/<file_path>` ({@link httpDownload}), or read from disk when
 * the server runs with `--local` (`localFiles`, {@link fileChunks}). The download and its
 * redirects go to `apiRoot`'s origin only ({@link DownloadHosts}). Never buffered whole; each
 * chunk is a view of a buffer the next one reuses. Every failure is an
 * {@link AttachmentFetchError} whose reason names no token, URL or local path (both embed the
 * token).
 */
export class TelegramFileFetcher implements AttachmentFetcher {
  readonly maxBytes: number;
  readonly #hosts: DownloadHosts;

  constructor(private readonly options: TelegramFileFetcherOptions) {
    this.maxBytes = options.maxBytes;
    this.#hosts = new DownloadHosts({ platform: "Telegram", roots: [options.apiRoot] });
  }

  async open(
    attachment: InboundAttachment,
    signal: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array>> {
    const file = await this.getFile(attachment, signal);
    if (file.file_size !== undefined && file.file_size > this.maxBytes) {
      throw new AttachmentFetchError(
        `it is ${formatBytes(file.file_size)}, over the ${formatBytes(this.maxBytes)} limit`,
      );
    }
    const path = file.file_path;
    if (path === undefined || path === "") {
      throw new AttachmentFetchError("Telegram gave no path to download the file from");
    }
    const bytes = this.options.localFiles
      ? this.readLocal(path, signal)
      : await this.download(path, signal);
    return checkedAgainstAnnounced(bytes, file.file_size ?? attachment.size, "Telegram");
  }

  private async getFile(attachment: InboundAttachment, signal: AbortSignal): Promise<File> {
    const { caller, api } = this.options;
    try {
      return await caller.call(
        "getFile",
        "-",
        (attempt) => api.getFile(attachment.ref, grammySignal(attempt)),
        { signal, idempotent: true },
      );
    } catch (error) {
      const facts = error instanceof TelegramDeliveryError ? error.facts : undefined;
      const description = facts?.description ?? "";
      if (TooBig.test(description)) {
        throw new AttachmentFetchError(
          "Telegram hands bots files of up to 20 MB only (a local Bot API server lifts this: telegram.localFiles)",
          { cause: error },
        );
      }
      if (facts?.status !== undefined) {
        throw new AttachmentFetchError(`Telegram refused it (${facts.status} ${description})`, {
          cause: error,
        });
      }
      // A transport failure: its description holds the request URL (token cut out); the user
      // is told what happened, not where.
      const code = /\b(E[A-Z]{3,})\b/.exec(description)?.[1];
      throw new AttachmentFetchError(
        `Telegram could not be reached${code === undefined ? "" : ` (${code})`}`,
        { cause: error },
      );
    }
  }

  /** Streams the file from the Bot API's file route, giving up when it stalls. */
  private async download(path: string, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>> {
    const { apiRoot, token, stallTimeoutMs } = this.options;
    const encoded = path.split("/").map(encodeURIComponent).join("/");
    let response: DownloadResponse;
    try {
      const url = new URL(`${apiRoot}/file/bot${token}/${encoded}`);
      // Only the waits for the network count: a slow inbox write is not a stall.
      response = await httpDownload(url, {
        signal,
        hosts: this.#hosts,
        headersTimeoutMs: stallTimeoutMs,
        stallTimeoutMs,
      });
    } catch (error) {
      throw this.failed("the download failed", error);
    }
    if (response.status < 200 || response.status > 299) {
      response.close();
      throw new AttachmentFetchError(`Telegram answered the download with ${response.status}`);
    }
    const failed = this.failed.bind(this);
    return {
      async *[Symbol.asyncIterator]() {
        try {
          yield* response.body;
        } catch (error) {
          throw failed("the download broke off", error);
        }
      },
    };
  }

  /**
   * Reads an absolute path a local Bot API server answered, opened without waiting for a
   * writer ({@link openRegularFile}): a pipe there is refused, never waited on. The path holds
   * the token (the server keeps files under `<dir>/<token>/`): no error carries it, not even
   * as a cause.
   */
  private readLocal(path: string, signal: AbortSignal): AsyncIterable<Uint8Array> {
    if (!isAbsolute(path)) {
      throw new AttachmentFetchError(
        "telegram.localFiles is on, but the Bot API server answered a relative file path: run it with --local, or turn localFiles off",
      );
    }
    return {
      async *[Symbol.asyncIterator]() {
        let handle: FileHandle | undefined;
        try {
          handle = await openRegularFile(path);
          if (handle !== undefined) yield* fileChunks(handle, signal);
        } catch (error) {
          if (signal.aborted) throw new AttachmentFetchError("the read was stopped");
          const code = (error as { code?: unknown }).code;
          throw new AttachmentFetchError(
            `the local Bot API server's file could not be read${typeof code === "string" ? ` (${code})` : ""}; the gateway must see its --dir at the same path`,
          );
        }
        if (handle === undefined) {
          throw new AttachmentFetchError(
            "the local Bot API server's file is not a regular file (a device, socket or pipe); telegram.localFiles reads regular files only",
          );
        }
      },
    };
  }

  /** A token-free fetch error, logged at debug level. */
  private failed(what: string, error: unknown): AttachmentFetchError {
    if (error instanceof AttachmentFetchError) return error;
    const said = error instanceof DownloadError ? error.message : describe(error);
    const reason = `${what}: ${redactText(said, [this.options.token])}`;
    this.options.logger.debug({ reason }, "telegram file download failed");
    return new AttachmentFetchError(reason);
  }
}

/** An error's message with its cause's code, when it has one. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  const code = typeof cause?.code === "string" ? cause.code : undefined;
  return code === undefined ? error.message : `${error.message} (${code})`;
}
