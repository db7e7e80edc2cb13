import { createRequire } from "node:module";
import type * as Sdk from "openai";

let loaded: typeof Sdk | undefined;

/**
 * The openai SDK, loaded by the first transcription client or the first failed chat stream
 * (chat-stream.ts makes its failures the SDK's errors): a gateway whose models answer, and
 * every CLI command, never loads it (about 100 ms of a start, measured with `import("openai")`
 * on the 2-core dev machine). Its CommonJS build, loaded synchronously; every class this
 * gateway checks errors against comes from it.
 */
export function openaiSdk(): typeof Sdk {
  loaded ??= createRequire(import.meta.url)("openai") as typeof Sdk;
  return loaded;
}

/** The SDK if a client loaded it: no SDK error can exist before (error checks ask this). */
export function loadedOpenaiSdk(): typeof Sdk | undefined {
  return loaded;
}
