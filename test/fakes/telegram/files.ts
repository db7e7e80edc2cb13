import { mkdir, writeFile } from "node:fs/promises";
import type { ServerResponse } from "node:http";
import { dirname, join } from "node:path";
import { type ApiAnswer, fail, ok } from "./protocol.js";

/**
 * The largest file the public Bot API hands a bot (`getFile`): 20 MiB, `20 << 20` in
 * telegram-bot-api. A local server (`--local`) has no such limit.
 */
export const PublicDownloadMaxBytes = 20 * 1024 * 1024;

/** Where `getFile` says a file lives, by how it was sent (as the real server names them). */
const Folders = {
  photo: ["photos", ".jpg"],
  document: ["documents", ""],
  audio: ["music", ".mp3"],
  voice: ["voice", ".oga"],
  video: ["videos", ".mp4"],
  video_note: ["video_notes", ".mp4"],
  animation: ["animations", ".mp4"],
} as const;
export type StoredKind = keyof typeof Folders;

/** A file users sent, as the fake's Bot API keeps it. */
export interface StoredFile {
  readonly fileId: string;
  readonly fileUniqueId: string;
  /** The bytes served; absent for a file only announced (its size alone matters). */
  readonly bytes: Buffer | undefined;
  /** `file_size` as announced: the bytes' length unless a test says otherwise. */
  readonly size: number;
  /** `file_path` relative to the bot's file root (`documents/file_3.pdf`). */
  readonly filePath: string;
}

/** One request on the download route, as the fake answered it. */
export interface RecordedDownload {
  /** The `<file_path>` part of the URL. */
  readonly filePath: string;
  /** Whether the URL carried the bot's token. */
  readonly tokenOk: boolean;
  readonly status: number;
  /** Bytes written in the answer's body (the file's, for a 200). */
  readonly bytes: number;
  /** The client went away before the body's end (a held download it gave up on). */
  readonly cutOff?: boolean;
}

/** What a test registers: the bytes, or only an announced size (a file too big to make). */
export interface FileInput {
  readonly kind: StoredKind;
  readonly bytes?: Buffer | undefined;
  /** `file_size` when it should differ from the bytes' length (or there are no bytes). */
  readonly fileSize?: number | undefined;
  /** Kept as the path's extension, as the real server does for documents. */
  readonly fileName?: string | undefined;
}

/**
 * The files behind `getFile` and `GET /file/bot<token>/<file_path>`. With `localDir` set it
 * acts as telegram-bot-api `--local`: `getFile` writes the file under
 * `<localDir>/<token>/<folder>/` and answers that absolute path, with no size limit.
 */
export class FileStore {
  private readonly byId = new Map<string, StoredFile>();
  private readonly byPath = new Map<string, StoredFile>();
  private seq = 0;
  /** Every request on the download route, in order (a held one once its client leaves). */
  readonly downloads: RecordedDownload[] = [];
  /** Downloads send this many bytes, then hold the connection (a stalled transfer). */
  holdAfterBytes: number | undefined;
  /**
   * Downloads send this many bytes with no `Content-Length` and close cleanly: a body cut
   * short that HTTP alone cannot tell from a whole one (a proxy or server that lost the rest).
   */
  endAfterBytes: number | undefined;
  /** The next downloads are answered 302 to these addresses, one each, in order. */
  readonly redirects: string[] = [];

  constructor(
    private readonly token: string,
    readonly localDir: string | undefined,
    private readonly downloadMaxBytes: number = PublicDownloadMaxBytes,
  ) {}

  register(input: FileInput): StoredFile {
    const n = ++this.seq;
    const [folder, extension] = Folders[input.kind];
    const named = input.fileName === undefined ? "" : /\.[A-Za-z0-9]{1,8}$/.exec(input.fileName);
    const file: StoredFile = {
      fileId: `in-${input.kind}-${n}-${Math.random().toString(36).slice(2, 10)}`,
      fileUniqueId: `uin-${n}`,
      bytes: input.bytes,
      size: input.fileSize ?? input.bytes?.length ?? 0,
      filePath: `${folder}/file_${n}${named?.[0] ?? extension}`,
    };
    this.byId.set(file.fileId, file);
    this.byPath.set(file.filePath, file);
    return file;
  }

  /**
   * `getFile`: the file's description, 400 for an unknown id or (public API) a file over
   * `downloadMaxBytes` (20 MiB unless a test says otherwise).
   */
  async getFile(params: Record<string, unknown>): Promise<ApiAnswer> {
    const fileId = params.file_id;
    if (fileId === undefined || fileId === "") {
      return fail(400, 'Bad Request: parameter "file_id" is required');
    }
    const file = this.byId.get(String(fileId));
    if (file === undefined) return fail(400, "Bad Request: invalid file_id");
    if (this.localDir === undefined && file.size > this.downloadMaxBytes) {
      return fail(400, "Bad Request: file is too big");
    }
    let filePath = file.filePath;
    if (this.localDir !== undefined) {
      filePath = this.localPathOf(file);
      await mkdir(dirname(filePath), { recursive: true });
      await writeFile(filePath, file.bytes ?? Buffer.alloc(0));
    }
    return ok({
      file_id: file.fileId,
      file_unique_id: file.fileUniqueId,
      file_size: file.size,
      file_path: filePath,
    });
  }

  /** Where a local server keeps `file` on its disk: `<localDir>/<token>/<file_path>`. */
  localPathOf(file: StoredFile): string {
    if (this.localDir === undefined) throw new Error("this fake is not a local Bot API server");
    return join(this.localDir, this.token, file.filePath);
  }

  /**
   * Serves `GET /file/bot<token>/<file_path>`: the stored bytes, 401 for a wrong token, or a
   * 302 to the next of `redirects`.
   */
  download(token: string, filePath: string, res: ServerResponse): void {
    const tokenOk = token === this.token;
    const redirect = this.redirects.shift();
    if (redirect !== undefined) {
      this.downloads.push({ filePath, tokenOk, status: 302, bytes: 0 });
      res.writeHead(302, { location: redirect });
      res.end();
      return;
    }
    const file = tokenOk && this.localDir === undefined ? this.byPath.get(filePath) : undefined;
    const status = !tokenOk ? 401 : file?.bytes === undefined ? 404 : 200;
    const bytes = status === 200 ? (file?.bytes ?? Buffer.alloc(0)) : undefined;
    this.downloads.push({ filePath, tokenOk, status, bytes: bytes?.length ?? 0 });
    if (bytes === undefined) {
      const description = status === 401 ? "Unauthorized" : "Not Found";
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: false, error_code: status, description }));
      return;
    }
    const end = this.endAfterBytes;
    if (end !== undefined) {
      const sent = bytes.subarray(0, end);
      this.downloads.pop();
      this.downloads.push({ filePath, tokenOk, status, bytes: sent.length });
      res.useChunkedEncodingByDefault = false; // close-delimited: the close ends the body
      res.writeHead(200, { "content-type": "application/octet-stream", connection: "close" });
      res.end(sent);
      return;
    }
    res.writeHead(200, {
      "content-type": "application/octet-stream",
      "content-length": String(bytes.length),
    });
    const hold = this.holdAfterBytes;
    if (hold === undefined) {
      res.end(bytes);
      return;
    }
    this.downloads.pop();
    res.write(bytes.subarray(0, hold));
    res.on("close", () =>
      this.downloads.push({ filePath, tokenOk, status, bytes: hold, cutOff: true }),
    );
  }
}
