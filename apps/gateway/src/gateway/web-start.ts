import { isLoopbackHost, parseListenAddress } from "@mediagate/io";
import { createConsoleSource } from "../web/console-source.js";
import { channelFor, type GatewayCore } from "./core.js";
import { healthReport } from "./health.js";

/**
 * Starts the web console when `web:` is configured; a non-loopback address is warned about.
 * The console's package (Fastify and its plugins, about 0.2 s of CPU to load) is loaded only
 * then: most gateways run without it.
 */
export async function startWeb(gateway: GatewayCore): Promise<void> {
  const web = gateway.config.web;
  const live = gateway.services.live;
  if (web === undefined || live === undefined) return;
  const { ensureWebToken, startWebConsole } = await import("@mediagate/web");
  const { host } = parseListenAddress(web.listen);
  if (!isLoopbackHost(host)) {
    gateway.logger.warn(
      { listen: web.listen },
      "the web console listens on a non-loopback address: anyone who can reach it can try the console token, and it is plain HTTP (the token and the session cookie cross the network unencrypted); put it behind a TLS proxy or keep it on 127.0.0.1",
    );
  }
  gateway.web = await startWebConsole({
    listen: web.listen,
    allowedHosts: web.allowedHosts,
    token: await ensureWebToken(gateway.config.home),
    logger: gateway.logger,
    // A failed action's message goes to the browser: no secret of the config in it.
    redact: (text) => gateway.redactor.text(text),
    source: createConsoleSource({
      runtimes: gateway.runtimes,
      services: gateway.services,
      live,
      ring: gateway.options.logRing,
      journal: gateway.journal,
      logger: gateway.logger,
      health: () => healthReport(gateway),
      channelFor: (profile, platform) => channelFor(gateway, profile, platform),
    }),
  });
  gateway.logger.info({ url: gateway.web.url }, "web console listening");
}
