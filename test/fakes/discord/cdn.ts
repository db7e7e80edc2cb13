import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { snowflake } from "./fixtures.js";

/** A file a user sends with a message (see `MessageInput.attachments`). */
export interface AttachmentInput {
  readonly filename: string;
  readonly bytes: Uint8Array;
  /** Discord's `content_type`; absent when Discord could not tell (it then sends none). */
  readonly contentType?: string;
  /**
   * A voice message: the message gets the `IS_VOICE_MESSAGE` flag (1 << 13) and this
   * attachment `duration_secs` and `waveform`, as Discord's mobile clients send them.
   */
  readonly voice?: boolean;
  /** The size the message announces (default the byte count): to make an attachment lie. */
  readonly declaredSize?: number;
  /**
   * The `url` (and `proxy_url`) the message carries instead of the fake's CDN route: an
   * attachment a compromised or misconfigured API points elsewhere. Its bytes stay served.
   */
  readonly url?: string;
}

/** An attachment object as Discord sends it in a message (API v10). */
export interface AttachmentObject {
  readonly id: string;
  readonly filename: string;
  /** The announced size. */
  readonly size: number;
  /** Where the bytes are: the fake's CDN route (`/cdn/attachments/…`). */
  readonly url: string;
  /** The same through the media proxy route (`/media/attachments/…`). */
  readonly proxy_url: string;
  readonly content_type?: string;
  readonly duration_secs?: number;
  readonly waveform?: string;
  readonly flags: number;
}

/** The message flag of a voice message. */
export const IsVoiceMessage = 1 << 13;

/** One request for an attachment's bytes, as the fake's CDN answered it. */
export interface RecordedDownload {
  readonly attachmentId: string;
  readonly filename: string;
  /** `cdn` for `url`, `media` for `proxy_url`. */
  readonly via: "cdn" | "media";
  readonly status: number;
  /** Whether the request carried an `Authorization` header (Discord's CDN needs none). */
  readonly authorization: boolean;
  /** Bytes written so far (all of them once `complete`). */
  readonly bytesSent: number;
  /** Every byte was written and the response ended. */
  readonly complete: boolean;
}

/**
 * How the next download(s) fail: an HTTP status, the connection cut after some bytes, a body
 * that ends cleanly short of the file, or a redirect (`302` to `redirectTo`).
 */
export interface DownloadFailure {
  readonly status?: number;
  readonly cutAfterBytes?: number;
  /**
   * Send this many bytes with no `Content-Length` and close cleanly: a body short of the
   * attachment's `size` that HTTP alone cannot tell from a whole one.
   */
  readonly endAfterBytes?: number;
  readonly redirectTo?: string;
  /** How many downloads fail (default 1). */
  readonly times?: number;
}

interface StoredAttachment {
  readonly id: string;
  readonly channelId: string;
  readonly filename: string;
  readonly contentType: string | undefined;
  readonly bytes: Buffer;
}

const ChunkBytes = 64 * 1024;
const AttachmentPath = /^\/(cdn|media)\/attachments\/(\d+)\/(\d+)\/[^/]+$/;

/**
 * The fake's stand-in for Discord's CDN (`cdn.discordapp.com`, `media.discordapp.net`): it
 * keeps the bytes of every attachment (users' and the bot's), hands out attachment objects
 * whose `url` and `proxy_url` point at its own HTTP server, signed like Discord's
 * (`?ex=&is=&hm=`), streams the bytes in chunks and records each download in `downloads`.
 * An unknown attachment or a wrong signature is a 404, as on Discord. Emits `download`.
 */
export class FakeCdn extends EventEmitter {
  readonly #downloads: {
    attachmentId: string;
    filename: string;
    via: "cdn" | "media";
    status: number;
    authorization: boolean;
    bytesSent: number;
    complete: boolean;
  }[] = [];
  readonly #files = new Map<string, StoredAttachment & { readonly signature: string }>();
  readonly #failures: (DownloadFailure & { remaining: number })[] = [];

  /** @param origin the fake's `http://127.0.0.1:PORT`. */
  constructor(private readonly origin: () => string) {
    super();
  }

  get downloads(): readonly RecordedDownload[] {
    return this.#downloads;
  }

  /** Downloads of one attachment (by id). */
  downloadsOf(attachmentId: string): RecordedDownload[] {
    return this.#downloads.filter((download) => download.attachmentId === attachmentId);
  }

  failNext(failure: DownloadFailure): void {
    this.#failures.push({ ...failure, remaining: failure.times ?? 1 });
  }

  /** Stores the bytes and returns the attachment object a message carries (API v10). */
  add(channelId: string, input: AttachmentInput): AttachmentObject {
    const id = snowflake();
    const bytes = Buffer.from(input.bytes);
    const signature = randomBytes(16).toString("hex");
    this.#files.set(id, {
      id,
      channelId,
      filename: input.filename,
      contentType: input.contentType,
      bytes,
      signature,
    });
    const name = encodeURIComponent(input.filename.replaceAll(" ", "_"));
    const expires = Math.floor(Date.now() / 1000) + 24 * 3600;
    const query = `?ex=${expires.toString(16)}&is=${(expires - 86_400).toString(16)}&hm=${signature}&`;
    const path = `attachments/${channelId}/${id}/${name}${query}`;
    return {
      id,
      filename: input.filename,
      size: input.declaredSize ?? bytes.length,
      url: input.url ?? `${this.origin()}/cdn/${path}`,
      proxy_url: input.url ?? `${this.origin()}/media/${path}`,
      ...(input.contentType === undefined ? {} : { content_type: input.contentType }),
      ...(input.voice ? { duration_secs: 2.5, waveform: "AAAAAAAAAAAA" } : {}),
      flags: 0,
    };
  }

  /** Whether `pathname` is one of the CDN's routes. */
  handles(pathname: string): boolean {
    return AttachmentPath.test(pathname);
  }

  async serve(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const [, via, , attachmentId] = AttachmentPath.exec(url.pathname) ?? [];
    const stored = attachmentId === undefined ? undefined : this.#files.get(attachmentId);
    const record = {
      attachmentId: attachmentId ?? "",
      filename: stored?.filename ?? "",
      via: via === "media" ? ("media" as const) : ("cdn" as const),
      status: 200,
      authorization: req.headers.authorization !== undefined,
      bytesSent: 0,
      complete: false,
    };
    this.#downloads.push(record);
    this.emit("download", record);
    const failure = this.#failures.find((candidate) => candidate.remaining > 0);
    if (failure) failure.remaining -= 1;
    if (
      req.method !== "GET" ||
      stored === undefined ||
      url.searchParams.get("hm") !== stored.signature
    ) {
      record.status = 404;
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("This content is no longer available.");
      return;
    }
    if (failure?.redirectTo !== undefined) {
      record.status = 302;
      res.writeHead(302, { location: failure.redirectTo });
      res.end();
      return;
    }
    if (failure?.status !== undefined) {
      record.status = failure.status;
      res.writeHead(failure.status, { "content-type": "text/plain" });
      res.end("upstream failure");
      return;
    }
    const contentType = stored.contentType ?? "application/octet-stream";
    if (failure?.endAfterBytes !== undefined) {
      const sent = stored.bytes.subarray(0, failure.endAfterBytes);
      res.useChunkedEncodingByDefault = false; // close-delimited: the close ends the body
      res.writeHead(200, { "content-type": contentType, connection: "close" });
      record.bytesSent = sent.length;
      res.end(sent); // `complete` stays false: the file's end was never sent
      return;
    }
    res.writeHead(200, {
      "content-type": contentType,
      "content-length": String(stored.bytes.length),
    });
    const cutAt = failure?.cutAfterBytes;
    for (let offset = 0; offset < stored.bytes.length; offset += ChunkBytes) {
      if (res.destroyed) return;
      let end = Math.min(offset + ChunkBytes, stored.bytes.length);
      if (cutAt !== undefined) end = Math.min(end, cutAt);
      if (end > offset && !res.write(stored.bytes.subarray(offset, end))) {
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off("drain", done);
            res.off("close", done);
            resolve();
          };
          res.on("drain", done);
          res.on("close", done);
        });
      }
      record.bytesSent = Math.max(record.bytesSent, end);
      if (cutAt !== undefined && end >= cutAt) {
        res.socket?.destroy();
        return;
      }
    }
    res.end(() => {
      record.complete = true;
    });
  }
}
