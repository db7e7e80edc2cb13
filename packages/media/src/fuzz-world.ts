import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, stat, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import type { TranslateContext } from "./types.js";

/**
 * A small disk world for the path-safety property suite and `pnpm fuzz:media`: a gateway
 * home with secrets, three slot directories, two volumes and an outside directory, wired
 * with symlinks and chains that point in and out of every root. Internal, not exported.
 */
export interface FuzzWorld {
  readonly base: string;
  readonly docker: TranslateContext;
  readonly local: TranslateContext;
  /** `dev:ino` of every file a plan may deliver, per backend. Anything else is an escape. */
  readonly deliverable: { readonly docker: Set<string>; readonly local: Set<string> };
  /** Host path prefixes the generators mix in (homes, outside, volumes). */
  readonly hostPrefixes: readonly string[];
  remove(): Promise<void>;
}

const SLOTS = ["shared_k", "profile_p1", "session_x"] as const;

/** Build the world in a fresh temp directory. */
export async function createFuzzWorld(): Promise<FuzzWorld> {
  const base = await mkdtemp(path.join(os.tmpdir(), "mediagate-fuzz-"));
  const home = path.join(base, "mghome");
  const outside = path.join(base, "outside");
  const vol = path.join(base, "vol");
  const deep = path.join(base, "deep");
  const tmpDir = path.join(base, "tmp");
  const docker: string[] = [];
  const local: string[] = [];
  const file = async (p: string, content: string, ...lists: string[][]) => {
    await mkdir(path.dirname(p), { recursive: true });
    await writeFile(p, content);
    for (const list of lists) list.push(p);
  };
  const link = async (p: string, target: string) => {
    await mkdir(path.dirname(p), { recursive: true });
    await symlink(target, p);
  };
  await mkdir(tmpDir, { recursive: true });
  for (const secret of [".env", "config.yaml", "state.db", "auth.json", "sessions/s.json"]) {
    await file(path.join(home, secret), `secret ${secret}`);
  }
  await file(path.join(home, "profiles/p1/.env"), "secret");
  await file(path.join(outside, "secret.txt"), "outside secret");
  await file(path.join(outside, "dir/inner.txt"), "outside inner");
  const slotDirs = SLOTS.map((slot) => path.join(home, "sandboxes/docker", slot));
  for (const [index, slotDir] of slotDirs.entries()) {
    const ws = path.join(slotDir, "workspace");
    const hm = path.join(slotDir, "home");
    const inLocal = index === 1 ? [docker, local] : [docker];
    await file(path.join(ws, "a.png"), "\x89PNG\r\n\x1a\n", ...inLocal);
    await file(path.join(ws, "sub/b.txt"), "b", ...inLocal);
    await file(path.join(ws, ".config/x"), "workspace dotdir is not a home", ...inLocal);
    await file(path.join(ws, `only-${index}.txt`), "per slot", ...inLocal);
    await file(path.join(hm, "notes.txt"), "home notes", docker);
    await file(path.join(hm, ".ssh/id_rsa"), "home secret");
    await file(path.join(hm, ".config/app.json"), "home secret");
    await link(path.join(ws, "link-in"), "a.png");
    await link(path.join(ws, "sub/up-in"), "../a.png");
    await link(path.join(ws, "link-out"), path.join(outside, "secret.txt"));
    await link(path.join(ws, "rel-out"), "../../../../../outside/secret.txt");
    await link(path.join(ws, "dirlink-out"), outside);
    await link(path.join(ws, "chain1"), "chain2");
    await link(path.join(ws, "chain2"), "sub/chain3");
    await link(path.join(ws, "sub/chain3"), path.join(outside, "dir/inner.txt"));
    await link(path.join(ws, "chain-in1"), "sub/chain-in2");
    await link(path.join(ws, "sub/chain-in2"), "../link-in");
    await link(path.join(ws, "loop1"), "loop2");
    await link(path.join(ws, "loop2"), "loop1");
    await link(path.join(ws, "link-to-home"), "../home/notes.txt");
    await link(path.join(ws, "link-to-ssh"), "../home/.ssh/id_rsa");
    await link(path.join(ws, "link-to-env"), path.join(home, ".env"));
    await link(path.join(ws, "link-etc"), "/etc/hostname");
    await link(path.join(hm, "link-ssh"), ".ssh/id_rsa");
    await link(path.join(hm, "link-notes"), "notes.txt");
    await link(path.join(hm, "link-ws"), "../workspace/a.png");
    try {
      execFileSync("mkfifo", [path.join(ws, "fifo")]);
    } catch {
      // No mkfifo: the FIFO case is simply absent.
    }
  }
  await file(path.join(vol, "v.txt"), "volume", docker, local);
  await file(path.join(deep, "d.txt"), "deep volume", docker);
  await link(path.join(vol, "vol-out"), path.join(outside, "secret.txt"));
  await link(path.join(vol, "vol-to-ws"), path.join(slotDirs[1]!, "workspace/a.png"));
  await link(path.join(deep, "deep-up"), "../vol/v.txt");
  const common = {
    slotDirs,
    protectedHomes: [home],
    tmpDir,
    volumes: [`${vol}:/data`, `${deep}:/data/deep:ro`, "named:/named"],
  };
  return {
    base,
    docker: { ...common, backend: "docker", allowDirs: [] },
    local: {
      ...common,
      backend: "local",
      allowDirs: [path.join(slotDirs[1]!, "workspace"), vol],
    },
    deliverable: { docker: await identities(docker), local: await identities(local) },
    hostPrefixes: [base, home, outside, vol, deep, ...slotDirs],
    remove: () => rm(base, { recursive: true, force: true }),
  };
}

async function identities(paths: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const p of paths) {
    const s = await stat(p);
    out.add(`${s.dev}:${s.ino}`);
  }
  return out;
}

const NAMES = [
  "a.png",
  "sub",
  "b.txt",
  "link-in",
  "up-in",
  "link-out",
  "rel-out",
  "dirlink-out",
  "secret.txt",
  "inner.txt",
  "dir",
  "chain1",
  "chain-in1",
  "loop1",
  ".config",
  "x",
  "app.json",
  ".ssh",
  "id_rsa",
  "link-ssh",
  "link-notes",
  "link-ws",
  "link-to-home",
  "link-to-ssh",
  "link-to-env",
  "link-etc",
  "notes.txt",
  "only-0.txt",
  "only-2.txt",
  "fifo",
  "v.txt",
  "d.txt",
  "vol-out",
  "vol-to-ws",
  "deep-up",
  "deep",
  ".env",
  "config.yaml",
  "state.db",
  "sessions",
  "s.json",
  "profiles",
  "p1",
  ".mediagate",
  "sandboxes",
  "docker",
  "workspace",
  "home",
  "outside",
  "hostname",
  "passwd",
  "docker.sock",
  "..",
  ".",
  "",
  "%2e%2e",
  "%2e%2e%2f",
  "a%2epng",
  "..%2f",
  "a.png\u0000",
  "\u0000",
  "é.png",
  "日本語",
  "\u202e",
  "a".repeat(300),
  "x".repeat(5000),
  " a.png",
  "a.png ",
];

const SEPARATORS = ["/", "/", "/", "//", "/./", "/../", "\\"];

/** Container-side starting points of generated paths. */
const CONTAINER_PREFIXES = [
  "/workspace",
  "/root",
  "/data",
  "/data/deep",
  "/named",
  "/",
  "/etc",
  "/var/run",
  "/root/.mediagate",
  "/workspace/..",
  "//workspace",
  "/./root",
  "~",
  "",
  ".",
  "..",
];

/** Paths a tag might name: known names and hostile segments joined every which way. */
export function tagPaths(world: FuzzWorld): fc.Arbitrary<string> {
  const segment = fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...NAMES) },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 12 }) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 8 }) },
  );
  const joined = fc
    .tuple(
      fc.constantFrom(...CONTAINER_PREFIXES, ...world.hostPrefixes),
      fc.array(fc.tuple(fc.constantFrom(...SEPARATORS), segment), { maxLength: 7 }),
    )
    .map(([prefix, parts]) => prefix + parts.map(([sep, name]) => sep + name).join(""));
  const plain = fc
    .tuple(
      fc.constantFrom(...CONTAINER_PREFIXES.slice(0, 5), ...world.hostPrefixes),
      fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 3 }),
    )
    .map(([prefix, names]) => [prefix, ...names].join("/"));
  return fc.oneof(
    { weight: 12, arbitrary: plain },
    { weight: 12, arbitrary: joined },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 64 }) },
  );
}
