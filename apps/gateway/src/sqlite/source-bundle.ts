/**
 * Only when the gateway runs from its TypeScript source (the test suites run `src/` through
 * vitest): a worker thread cannot load `.ts` files, so the worker entry and the program module
 * are compiled with esbuild (a dev dependency; a built gateway never imports this module) into
 * the package's `node_modules/.cache`, where their package imports (`better-sqlite3`,
 * `@mediagate/sandbox`) resolve as they do from `src/`. Files are named by their content and
 * written by rename, so concurrent test processes share them safely; each pair is compiled once
 * per process.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildSync } from "esbuild";

const CacheDir = fileURLToPath(
  new URL("../../node_modules/.cache/mediagate-sqlite-workers/", import.meta.url),
);

const compiled = new Map<string, { entry: URL; program: URL }>();

/** Writes `text` as `<CacheDir><hash>-<name>` unless it is there already. */
function cached(name: string, text: string): URL {
  const hash = createHash("sha256").update(text).digest("hex").slice(0, 20);
  const path = `${CacheDir}${hash}-${name}`;
  if (!existsSync(path)) {
    mkdirSync(CacheDir, { recursive: true });
    const partial = `${path}.${process.pid}.tmp`;
    writeFileSync(partial, text);
    renameSync(partial, path);
  }
  return pathToFileURL(path);
}

/** The compiled `entry` (worker-thread.ts) and `program`, as URLs a worker thread can load. */
export function compileForWorker(entry: URL, program: URL): { entry: URL; program: URL } {
  const key = `${entry.href}\n${program.href}`;
  const known = compiled.get(key);
  if (known !== undefined) return known;
  const output = buildSync({
    entryPoints: { entry: fileURLToPath(entry), program: fileURLToPath(program) },
    outdir: CacheDir,
    write: false,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    packages: "external",
    logLevel: "silent",
  });
  const files = new Map(output.outputFiles.map((file) => [basename(file.path), file.text]));
  const result = {
    entry: cached("entry.mjs", files.get("entry.js") ?? ""),
    program: cached("program.mjs", files.get("program.js") ?? ""),
  };
  compiled.set(key, result);
  return result;
}
