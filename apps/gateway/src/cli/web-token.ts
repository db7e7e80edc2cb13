import { ensureWebToken } from "@mediagate/web";
import type { GatewayEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import type { Redactor } from "../redact.js";
import { createHomes } from "./homes.js";

/**
 * `mediagate web token`: the web console's login token of the config's install, made (in the
 * root home, owner-only) when there is none yet, so the operator can have it before the first
 * start. Works whether or not `web:` is configured.
 */
export async function webToken(options: {
  config?: string | undefined;
  env: GatewayEnv;
  redactor?: Redactor | undefined;
}): Promise<string> {
  const config = await loadConfig({
    path: options.config,
    env: options.env,
    redactor: options.redactor,
  });
  await createHomes(config);
  return ensureWebToken(config.home);
}
