import { type FileHandle, open, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, resolve } from "node:path";
import { fileChunks, openRegularFile, ReadFlags } from "./file-chunks.js";
import {
  AttachmentFetchError,
  type AttachmentFetcher,
  type AttachmentSentAs,
  type InboundAttachment,
} from "./types.js";

/** How the console says how `/attach` is used (its help lists it the same way). */
export const AttachUsage =
  '/attach <path> [text] — send a file from this machine as if you had sent it to the bot; quote a path with spaces: /attach "my file.pdf" what is in it?';

/** What an `/attach` line asks for: a file (absolute path) and the message's text. */
export interface AttachRequest {
  readonly path: string;
  readonly text: string;
}

/**
 * Reads a console line as `/attach <path> [text]`: `undefined` when it is not an `/attach`
 * line, a `string` (what is wrong) when it is one without a usable path. The path is the first
 * word, or the text between a pair of `"` or `'` when it starts with one (no escapes inside);
 * a leading `~/` is the user's home; a relative path is taken from the gateway's working
 * directory. The rest of the line, trimmed, is the message's text.
 */
export function parseAttach(
  line: string,
  cwd: string = process.cwd(),
  home: string = homedir(),
): AttachRequest | string | undefined {
  const match = /^\/attach(?:\s+|$)/.exec(line);
  if (match === null) return undefined;
  const rest = line.slice(match[0].length);
  if (rest === "") return `📎 /attach needs a file. Usage: ${AttachUsage}`;
  let raw: string;
  let after: string;
  const quote = rest[0];
  if (quote === '"' || quote === "'") {
    const end = rest.indexOf(quote, 1);
    if (end < 0) return `📎 /attach: the path's closing ${quote} is missing. Usage: ${AttachUsage}`;
    raw = rest.slice(1, end);
    after = rest.slice(end + 1);
    if (after !== "" && !/^\s/.test(after)) {
      return `📎 /attach: put a space after the quoted path. Usage: ${AttachUsage}`;
    }
  } else {
    const end = rest.search(/\s/);
    raw = end < 0 ? rest : rest.slice(0, end);
    after = end < 0 ? "" : rest.slice(end);
  }
  if (raw === "") return `📎 /attach: the path is empty. Usage: ${AttachUsage}`;
  const expanded = raw === "~" || raw.startsWith("~/") ? home + raw.slice(1) : raw;
  return { path: resolve(cwd, expanded), text: after.trim() };
}

/**
 * Checks that `path` is a regular file this process can read, before anything is sent: the
 * attachment it becomes, or the console's line saying what is wrong and what to do.
 */
export async function attachmentFor(path: string): Promise<InboundAttachment | string> {
  try {
    const info = await stat(path);
    if (info.isDirectory()) {
      return `📎 ${path} is a directory; /attach sends one file. Name a file in it, or pack it first (tar czf dir.tgz …).`;
    }
    if (!info.isFile()) {
      return `📎 ${path} is not a regular file (a device, socket or pipe); /attach sends regular files only.`;
    }
    // stat does not prove the file can be read: open it, as the fetch will.
    await (await open(path, ReadFlags)).close();
    return { name: basename(path), sentAs: sentAsOf(path), size: info.size, ref: path };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      return `📎 There is no file at ${path}. Check the path (quote it if it has spaces: /attach "my file.pdf"); nothing was sent.`;
    }
    if (code === "EACCES" || code === "EPERM") {
      return `📎 ${path} cannot be read by the gateway (permission denied). Make it readable (chmod a+r) or copy it somewhere readable; nothing was sent.`;
    }
    return `📎 ${path} cannot be read (${code ?? String(error)}); nothing was sent.`;
  }
}

/** The label a chat would give the file: a photo for a picture, else a document. */
function sentAsOf(path: string): AttachmentSentAs {
  return /\.(jpe?g|png|webp)$/i.test(path) ? "photo" : "document";
}

/**
 * The console's {@link AttachmentFetcher}: an attachment's `ref` is an absolute path on this
 * host, streamed from disk into one reused buffer ({@link fileChunks}). A file gone, unreadable
 * or no longer a regular file by the time it is fetched (a message run again after a restart)
 * fails with a reason that names the path.
 */
export function consoleFetcher(maxBytes: number): AttachmentFetcher {
  return {
    maxBytes,
    async open(attachment, signal) {
      let handle: FileHandle | undefined;
      try {
        handle = await openRegularFile(attachment.ref);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        throw new AttachmentFetchError(
          code === "ENOENT"
            ? `${attachment.ref} is no longer there`
            : `${attachment.ref} cannot be read: ${code ?? "unknown error"}`,
          { cause: error },
        );
      }
      if (handle === undefined) {
        throw new AttachmentFetchError(
          `${attachment.ref} is no longer a regular file (a device, socket or pipe)`,
        );
      }
      // Over maxBytes, the inbox stops reading and refuses the file with its notice.
      return fileChunks(handle, signal);
    },
  };
}
