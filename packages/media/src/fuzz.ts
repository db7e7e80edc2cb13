/**
 * `pnpm fuzz:media`: a standalone run of generated tag paths against a real disk world
 * (see fuzz-world.ts). Every file the resolver opens must be one of the world's deliverable
 * files; opening any other file (a secret, something outside the candidate roots) is an
 * escape. Every tenth quotable path also runs through `planMedia`. Usage: `node dist/fuzz.js [cases] [seed]`. The last line is always
 * `fuzz: <N> cases, <M> escapes`; the exit code is 1 when M > 0 or the run crashed.
 */
import fc from "fast-check";
import { createFuzzWorld, tagPaths } from "./fuzz-world.js";
import { telegramLimits } from "./limits.js";
import type { DescriptorFile } from "./open-file.js";
import { planMedia, prepareSetup } from "./plan.js";
import { resolveOnHost } from "./resolve.js";

const runs = Number(process.argv[2] ?? 100_000);
const seed = Number(process.argv[3] ?? Date.now() % 2 ** 31);
let cases = 0;
let escapes = 0;
let crashed = false;
const world = await createFuzzWorld();
try {
  const setups = {
    docker: await prepareSetup(world.docker),
    local: await prepareSetup(world.local),
  };
  const started = performance.now();
  const property = fc.asyncProperty(
    fc.constantFrom("docker" as const, "local" as const),
    tagPaths(world),
    async (backend, tagPath) => {
      cases++;
      if (cases % 10 === 0 && !/[`\r\n]/.test(tagPath) && tagPath.trim() === tagPath) {
        await checkPlan(backend, tagPath);
      }
      const resolution = await resolveOnHost(tagPath, setups[backend]);
      if (resolution.status !== "found") return true;
      const { identity } = resolution.file;
      await resolution.file.close();
      if (!world.deliverable[backend].has(identity)) {
        escapes++;
        if (escapes <= 10) {
          console.error(`escape (${backend}): ${JSON.stringify(tagPath)}`, resolution.candidates);
        }
      }
      return true;
    },
  );
  await fc.assert(property, { numRuns: runs, seed });
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `fuzz: seed ${seed}, ${seconds.toFixed(1)} s, ${Math.round(cases / seconds)} cases/s`,
  );
} catch (error) {
  crashed = true;
  console.error(`fuzz: crashed with seed ${seed}:`, error);
} finally {
  await world.remove();
}
console.log(`fuzz: ${cases} cases, ${escapes} escapes`);

/** Every tenth quotable path also goes through the whole `planMedia` pipeline. */
async function checkPlan(backend: "docker" | "local", tagPath: string): Promise<void> {
  const plan = await planMedia(`see MEDIA:\`${tagPath}\``, world[backend], telegramLimits());
  try {
    for (const item of plan.ready()) {
      if (!world.deliverable[backend].has((item.file as DescriptorFile).identity)) {
        escapes++;
        console.error(`escape via planMedia (${backend}): ${JSON.stringify(tagPath)}`);
      }
    }
  } finally {
    await plan.dispose();
  }
}
process.exitCode = escapes > 0 || crashed ? 1 : 0;
