// Bundles the front end (client/app.ts and client/login.ts with what they import: preact + htm)
// into dist/public with the static files of public/. Run by `pnpm build` after tsc.
import { cp, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist", "public");
await mkdir(out, { recursive: true });
await cp(join(root, "public"), out, { recursive: true });
await build({
  entryPoints: { app: join(root, "client", "app.ts"), login: join(root, "client", "login.ts") },
  outdir: out,
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning",
});
