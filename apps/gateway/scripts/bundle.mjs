// The `mediagate` command as the few files `bin/mediagate.js` runs: tsc's `dist/` (one module per
// source file, the package's library entry) bundled with its dependencies into `dist/bundle/`
// by esbuild, the CLI and the database threads' programs as entries, their shared code and each
// lazily imported part (the gateway, discord.js, ...) as chunks.
//
// Why: Node 20 has no compile cache, and loading the gateway from `dist/` meant resolving and
// reading about 460 CommonJS files of node_modules besides our own: 0.85-0.95 s of CPU for
// `import("dist/gateway.js")` on the 2-core machine, 0.44 s for the same code bundled. Every
// start of the gateway and every CLI command pays it: a console gateway's start and stop took
// 1.32-1.57 s of CPU before, 0.68-0.73 s bundled (bench/README.md, "Start-up: the command
// bundled").
//
// What stays outside, loaded from node_modules at run time:
// - native addons (better-sqlite3) and optional native helpers of dependencies, which esbuild
//   cannot bundle;
// - @mediagate/web, which serves its files from its own `dist/public` next to its modules;
// - what the code loads through `createRequire` on first use (openai, pg, gpt-tokenizer);
// - esbuild, which only the test suites' worker compiler (sqlite/source-bundle.ts) loads.
// `programUrl` finds the database programs next to the module that names them, so the programs
// are entries of the same directory, under the names the code gives them (`workerPrograms`).
import { readdir, readFile, rm } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const distDir = join(packageDir, "dist");
const outdir = join(distDir, "bundle");

/**
 * The modules the code starts worker threads on, read from its `programUrl("./<name>.js",
 * import.meta.url)` calls: `<name>` → the module's path. Read, not listed here, so a new
 * program is bundled under the name its caller looks for.
 */
async function workerPrograms() {
  const call = /programUrl\("\.\/([A-Za-z0-9_-]+)\.js", import\.meta\.url\)/g;
  const programs = {};
  for (const file of await readdir(distDir, { recursive: true })) {
    if (!file.endsWith(".js") || file.startsWith("bundle/")) continue;
    const text = await readFile(join(distDir, file), "utf8");
    for (const [, name] of text.matchAll(call)) {
      const path = relative(packageDir, join(distDir, dirname(file), `${name}.js`));
      if (programs[name] !== undefined && programs[name] !== path) {
        throw new Error(
          `bundle: two worker programs are named ${name}: ${programs[name]}, ${path}`,
        );
      }
      programs[name] = path;
    }
  }
  if (Object.keys(programs).length === 0) throw new Error("bundle: no programUrl call found");
  return programs;
}

await rm(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: packageDir,
  entryPoints: { cli: "dist/cli.js", ...(await workerPrograms()) },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  external: [
    "better-sqlite3",
    "@mediagate/web",
    "@mediagate/web/*",
    // Optional native parts of ssh2 (docker-modem) and discord.js's WebSocket: each is loaded in
    // a try/catch and absent here.
    "cpu-features",
    "bufferutil",
    "utf-8-validate",
    "zlib-sync",
    "pg-native",
    // The worker programs' compiler when the gateway runs from its TypeScript source
    // (sqlite/source-bundle.ts): a bundle never loads it.
    "esbuild",
  ],
  // CommonJS dependencies call `require` and read `__dirname`; an ES module has neither.
  banner: {
    js: [
      'import { createRequire as __mgCreateRequire } from "node:module";',
      'import { dirname as __mgDirname } from "node:path";',
      'import { fileURLToPath as __mgFileURLToPath } from "node:url";',
      "const require = __mgCreateRequire(import.meta.url);",
      "const __filename = __mgFileURLToPath(import.meta.url);",
      "const __dirname = __mgDirname(__filename);",
    ].join("\n"),
  },
  logLevel: "warning",
});
