import { readFileSync } from "node:fs";

/**
 * The gateway's version: the `version` field of `apps/gateway/package.json`, read at run time
 * from the package the running code belongs to (`../../package.json` from `dist/bundle/`,
 * `dist/cli/` or `src/cli/`), so a build, a deployed copy and the Docker image all report the
 * version they were made from. Throws when the file is missing or has no version string.
 */
export function packageVersion(): string {
  const file = new URL("../../package.json", import.meta.url);
  const parsed: unknown = JSON.parse(readFileSync(file, "utf8"));
  if (
    typeof parsed === "object" &&
    parsed !== null &&
    "version" in parsed &&
    typeof parsed.version === "string"
  ) {
    return parsed.version;
  }
  throw new Error(`${file.pathname} has no "version" string`);
}
