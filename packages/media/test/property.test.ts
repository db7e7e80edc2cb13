import { realpath } from "node:fs/promises";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { extractMedia } from "../src/extract.js";
import { createFuzzWorld, type FuzzWorld, tagPaths } from "../src/fuzz-world.js";
import { telegramLimits } from "../src/limits.js";
import type { DescriptorFile } from "../src/open-file.js";
import { containerPathOf, isWithin, normalizeAbsolute } from "../src/paths.js";
import { planMedia, prepareSetup } from "../src/plan.js";
import { resolveOnHost } from "../src/resolve.js";

let world: FuzzWorld;
beforeAll(async () => {
  world = await createFuzzWorld();
});
afterAll(async () => {
  await world.remove();
});

const backend = fc.constantFrom("docker" as const, "local" as const);

describe("path safety properties (real files, generated paths)", () => {
  it("never opens a file outside the candidate roots or on the deny list", async () => {
    const setups = {
      docker: await prepareSetup(world.docker),
      local: await prepareSetup(world.local),
    };
    await fc.assert(
      fc.asyncProperty(backend, tagPaths(world), async (kind, tagPath) => {
        const resolution = await resolveOnHost(tagPath, setups[kind]);
        if (resolution.status !== "found") return;
        const { identity } = resolution.file;
        await resolution.file.close();
        const ok = resolution.candidates.at(-1)!;
        expect(ok.result).toBe("ok");
        expect(isWithin(ok.detail!, await realpath(ok.root))).toBe(true);
        expect(world.deliverable[kind].has(identity)).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it("plans only deliverable files and leaves only unreachable tags in the text", async () => {
    const quotable = tagPaths(world).filter(
      (p) => !/[`\n\r]/.test(p) && p.trim() === p && p !== "",
    );
    await fc.assert(
      fc.asyncProperty(
        backend,
        fc.array(quotable, { minLength: 1, maxLength: 4 }),
        async (kind, tagged) => {
          const reply = tagged.map((p) => `file MEDIA:\`${p}\``).join("\n");
          const plan = await planMedia(reply, world[kind], telegramLimits());
          try {
            for (const outcome of plan.outcomes) {
              if (outcome.status === "ready") {
                const { identity } = outcome.file as DescriptorFile;
                expect(world.deliverable[kind].has(identity)).toBe(true);
              }
            }
            const unreachable = new Set(
              plan.outcomes.filter((o) => o.status === "unreachable").map((o) => o.path),
            );
            for (const left of extractMedia(plan.text).tags) {
              const normalized =
                kind === "docker" ? containerPathOf(left.path) : normalizeAbsolute(left.path);
              expect(unreachable.has(left.path) || unreachable.has(normalized ?? "")).toBe(true);
            }
          } finally {
            await plan.dispose();
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it("with a reader who may read every file, walks every path to what the gateway's own open finds", async () => {
    const gateway = await prepareSetup(world.docker);
    const self = { uid: process.getuid?.(), gids: [process.getgid?.() ?? 0] };
    const session = await prepareSetup({ ...world.docker, reader: async () => self });
    await fc.assert(
      fc.asyncProperty(tagPaths(world), async (tagPath) => {
        const [expected, walked] = [
          await resolveOnHost(tagPath, gateway),
          await resolveOnHost(tagPath, session),
        ];
        const identities = await Promise.all(
          [expected, walked].map(async (r) => {
            if (r.status !== "found") return r.status;
            await r.file.close();
            return r.file.identity;
          }),
        );
        expect(identities[1], tagPath).toBe(identities[0]);
      }),
      {
        numRuns: 2000,
        // Every link of the world, walked at least once.
        examples: [
          ...["link-in", "sub/up-in", "chain1", "chain-in1", "loop1", "rel-out", "fifo"],
          ...["dirlink-out/inner.txt", "link-to-home", "link-to-ssh", "link-to-env", "link-etc"],
        ]
          .map((name) => `/workspace/${name}`)
          .concat(["/root/link-ssh", "/root/link-notes", "/root/link-ws", "/data/vol-to-ws"])
          .concat(["/data/vol-out", "/data/deep/deep-up", "/workspace/sub/../link-in"])
          .map((tag) => [tag]),
      },
    );
  });

  it("finds the deliverable files the generators aim at (the suite is not vacuous)", async () => {
    const setup = await prepareSetup(world.docker);
    const found = await resolveOnHost("/workspace/link-in", setup);
    expect(found.status).toBe("found");
    if (found.status === "found") await found.file.close();
    const escaped = await resolveOnHost("/workspace/chain1", setup);
    expect(escaped.status).toBe("denied");
  });
});
