import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach } from "vitest";
import type { TranslateContext } from "../src/types.js";

/** Minimal valid files for magic-byte sniffing. */
export const Bytes = {
  png: Buffer.from(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082",
    "hex",
  ),
  gif: Buffer.from("GIF89a\x01\x00\x01\x00\x00\x00\x00;", "latin1"),
  jpeg: Buffer.from("ffd8ffe000104a46494600010100000100010000ffd9", "hex"),
  mp4: Buffer.concat([
    Buffer.from("00000018667479706d703432000000006d703432", "hex"),
    Buffer.from("0000000869736f6d", "hex"),
  ]),
  opus: oggPage("OpusHead\x01\x01\x38\x01\x80\xbb\x00\x00\x00\x00\x00"),
  vorbis: oggPage("\x01vorbis\x00\x00\x00\x00\x01\x44\xac\x00\x00"),
  text: Buffer.from("plain text, no magic\n"),
} as const;

function oggPage(payload: string): Buffer {
  const body = Buffer.from(payload, "latin1");
  const header = Buffer.alloc(28);
  header.write("OggS", 0, "latin1");
  header[5] = 0x02;
  header[26] = 1;
  header[27] = body.length;
  return Buffer.concat([header, body, Buffer.alloc(64)]);
}

/** A temp directory removed after the test. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "mediagate-media-"));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** Write a file, creating its parents. */
export async function put(file: string, content: string | Buffer = "x"): Promise<string> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content);
  return file;
}

/** Create a symlink, creating its parents. */
export async function link(file: string, target: string): Promise<string> {
  await mkdir(path.dirname(file), { recursive: true });
  await symlink(target, file);
  return file;
}

/** A gateway home with shared, profile and session slot dirs, and a docker context. */
export interface Layout {
  readonly root: string;
  readonly home: string;
  readonly shared: string;
  readonly profile: string;
  readonly session: string;
  readonly outside: string;
  readonly ctx: TranslateContext;
}

export async function layout(extra: Partial<TranslateContext> = {}): Promise<Layout> {
  const root = await tempDir();
  const home = path.join(root, "home");
  const slot = (name: string) => path.join(home, "sandboxes/docker", name);
  const [shared, profile, session] = [slot("shared_k"), slot("default"), slot("session_s")];
  for (const dir of [shared, profile, session]) {
    await mkdir(path.join(dir, "workspace"), { recursive: true });
    await mkdir(path.join(dir, "home"), { recursive: true });
  }
  const outside = path.join(root, "outside");
  await mkdir(outside);
  await mkdir(path.join(root, "tmp"));
  const ctx: TranslateContext = {
    backend: "docker",
    slotDirs: [shared, profile, session],
    volumes: [],
    allowDirs: [],
    protectedHomes: [home],
    tmpDir: path.join(root, "tmp"),
    ...extra,
  };
  return { root, home, shared, profile, session, outside, ctx };
}
