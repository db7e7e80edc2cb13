import { randomBytes } from "node:crypto";
import { chmod, link, readFile, stat, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { MediagateError } from "@mediagate/io";

/** The file in the root home that holds the web console's login secret (0600). */
export const WebTokenFileName = "web-token";

/** Where the login secret of the install with root home `home` is kept. */
export function webTokenPath(home: string): string {
  return join(home, WebTokenFileName);
}

/** The token file is readable by other host users, or holds no usable token. */
export class WebTokenError extends MediagateError {
  override readonly name = "WebTokenError";
  readonly code = "MG_WEB_TOKEN_UNUSABLE";
}

/** Smallest token accepted from the file: shorter ones are guessable. */
const MinTokenChars = 32;

/**
 * The web console's login secret: read from `<home>/web-token`, or generated (32 random bytes,
 * base64url) and written there owner-only (0600) when the file does not exist. A file other
 * users may read, or one holding a short token, is refused with what to do.
 */
export async function ensureWebToken(home: string): Promise<string> {
  const path = webTokenPath(home);
  const existing = await readToken(path);
  if (existing !== undefined) return existing;
  const token = randomBytes(32).toString("base64url");
  // Written whole under a temporary name, then linked to its own (never replacing one): a
  // full disk or a kill mid-write once left an empty web-token that every later start and
  // `mediagate web token` refused as "no usable token".
  const temporary = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(temporary, `${token}\n`, { mode: 0o600, flag: "wx" });
    await chmod(temporary, 0o600);
    await link(temporary, path);
  } catch (error) {
    // Another process made it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === "EEXIST") {
      const raced = await readToken(path);
      if (raced !== undefined) return raced;
    }
    throw error;
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
  return token;
}

async function readToken(path: string): Promise<string | undefined> {
  let text: string;
  try {
    const info = await stat(path);
    if ((info.mode & 0o077) !== 0) {
      throw new WebTokenError(
        `${path} is readable by other users (mode ${(info.mode & 0o777).toString(8)}); run chmod 600 ${path}, or delete it to have a new token made`,
      );
    }
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const token = text.trim();
  if (token.length < MinTokenChars) {
    throw new WebTokenError(
      `${path} holds no usable token (at least ${MinTokenChars} characters); delete it to have a new one made`,
    );
  }
  return token;
}
