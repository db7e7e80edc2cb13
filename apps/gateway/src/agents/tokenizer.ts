import { createRequire } from "node:module";

type GptTokenizer = typeof import("gpt-tokenizer");

let loaded: GptTokenizer | undefined;

/**
 * gpt-tokenizer, loaded on its first use: its encoding tables cost about 0.2–0.4 s of CPU to
 * load (measured with `node --cpu-prof` on the CLI's start), which only a gateway whose agent
 * counts tokens (the `openai` agent) should pay, once, not every start of every gateway.
 */
export function tokenizer(): GptTokenizer {
  loaded ??= createRequire(import.meta.url)("gpt-tokenizer") as GptTokenizer;
  return loaded;
}
