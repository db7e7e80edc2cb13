/**
 * `pnpm fuzz:download`: a standalone run of generated HTTP/1.1 answers through the download's
 * head and body parsers (see http-answer-fuzz.ts), far past the bounded runs of
 * `http-answer.test.ts`. Half the cases are valid answers, cut anywhere and read through rings
 * of any size, which must give exactly their head and body; half are answers with random bytes
 * changed, inserted, removed or repeated, which must give the same outcome however they arrive
 * and fail, if at all, only with a `DownloadError` (never another exception, never a step that
 * makes no progress: a hang). Usage: `node dist/channels/fuzz-download.js [cases] [seed]`. The
 * last line is always `fuzz: <N> cases, <M> failures`; the exit code is 1 when M > 0.
 */
import { deepStrictEqual } from "node:assert/strict";
import fc from "fast-check";
import { Defaults } from "../defaults.js";
import { cuts, mutated, outcomeOf, piecesOf, readAnswer, samples } from "./http-answer-fuzz.js";

const runs = Number(process.argv[2] ?? 100_000);
const seed = Number(process.argv[3] ?? Date.now() % 2 ** 31);
const ringBytes = fc.integer({ min: 1, max: 1024 });
/** The mutated answers' head bound: small, so that heads and lines past it are among them. */
const smallHead = 256;
let cases = 0;
let failures = 0;

const valid = fc.property(samples(), cuts(), ringBytes, (sample, at, ring) => {
  cases++;
  const options = { maxHeadBytes: Defaults.download.maxHeadBytes, ringBytes: ring };
  deepStrictEqual(readAnswer(piecesOf(sample.bytes, at), options), sample.expected);
});
const changed = fc.property(
  fc.oneof(
    samples().chain((sample) => mutated(sample.bytes)),
    fc.uint8Array({ maxLength: 400 }).map((bytes) => Buffer.from(bytes)),
  ),
  cuts(),
  cuts(),
  ringBytes,
  ringBytes,
  (answer, a, b, ringA, ringB) => {
    cases++;
    const once = outcomeOf(piecesOf(answer, a), { maxHeadBytes: smallHead, ringBytes: ringA });
    deepStrictEqual(
      outcomeOf(piecesOf(answer, b), { maxHeadBytes: smallHead, ringBytes: ringB }),
      once,
    );
  },
);

const started = performance.now();
const params = { numRuns: Math.ceil(runs / 2), seed };
const checks: ReadonlyArray<readonly [string, () => void]> = [
  ["valid answers", () => fc.assert(valid, params)],
  ["changed answers", () => fc.assert(changed, params)],
];
for (const [name, check] of checks) {
  try {
    check();
  } catch (error) {
    failures++;
    console.error(`fuzz: ${name} failed with seed ${seed}:`, error);
  }
}
const seconds = (performance.now() - started) / 1000;
console.log(`fuzz: seed ${seed}, ${seconds.toFixed(1)} s, ${Math.round(cases / seconds)} cases/s`);
console.log(`fuzz: ${cases} cases, ${failures} failures`);
process.exitCode = failures > 0 ? 1 : 0;
