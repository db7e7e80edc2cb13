import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { programUrl } from "./database-worker.js";
import { compileForWorker } from "./source-bundle.js";

/**
 * Each SQLite database runs in a worker thread of its own, which loads its program module and
 * everything that imports. The sandbox's and the media package's indexes load dockerode and the
 * media planner (about 0.5 s of CPU and 28 MB per thread): the programs import the packages'
 * small subpaths instead (`@mediagate/sandbox/instance`, `/defaults`, `@mediagate/media/plan-record`,
 * `@mediagate/io/mediagate-error`).
 */
describe("the SQLite worker programs", () => {
  const programs = {
    journal: new URL("../durable/journal-database.ts", import.meta.url),
    state: new URL("../state/state-database.ts", import.meta.url),
    integrity: new URL("./integrity-database.ts", import.meta.url),
  };

  for (const [name, program] of Object.entries(programs)) {
    it(`${name}: imports no package index but better-sqlite3's`, () => {
      const compiled = compileForWorker(programUrl("./worker-thread.js", import.meta.url), program);
      const text = readFileSync(compiled.program, "utf8");
      const packages = [...text.matchAll(/^import .* from "([^".][^"]*)";$/gm)]
        .map((match) => match[1])
        .filter((specifier) => !specifier?.startsWith("node:"));
      expect(packages.length).toBeGreaterThan(0);
      for (const specifier of packages) {
        expect(
          specifier === "better-sqlite3" ||
            /^@mediagate\/(sandbox|media|io)\/[a-z-]+$/.test(specifier ?? ""),
          `${name} imports ${specifier}`,
        ).toBe(true);
      }
    });
  }
});
