import type { ChannelHealth } from "../channels/types.js";
import { type HealthReport, overallStatus } from "../health/server.js";
import type { GatewayCore } from "./core.js";
import { GatewayDefaults } from "./options.js";

/** What the health endpoint reports (also used by `/status`). */
export async function healthReport(gateway: GatewayCore): Promise<HealthReport> {
  const channels: ChannelHealth[] = gateway.channels.map((c) => c.health());
  const engine = await engineReachable(gateway);
  const queue = gateway.services.queue;
  const damage = gateway.journal.damage;
  const journal: HealthReport["journal"] =
    damage === undefined
      ? { writable: gateway.journalProblem === undefined, detail: gateway.journalProblem }
      : { writable: false, damaged: true, detail: damage.message };
  return {
    status: overallStatus(channels, journal, engine.reachable),
    channels,
    journal,
    engine,
    queue: { running: queue.active, queued: queue.pending },
    outbox: { scheduled: gateway.outbox.scheduled },
  };
}

/** Whether the engine answers a ping, reused for a few seconds (probes may poll often). */
export async function engineReachable(
  gateway: GatewayCore,
): Promise<{ reachable: boolean; detail?: string | undefined }> {
  const cached = gateway.engineCheck;
  const nowMs = gateway.clock.monoMs();
  if (cached !== undefined && nowMs - cached.atMs < GatewayDefaults.engineCheckTtlMs)
    return { reachable: cached.reachable, detail: cached.detail };
  let check: { atMs: number; reachable: boolean; detail?: string | undefined };
  try {
    await gateway.engine.ping();
    check = { atMs: gateway.clock.monoMs(), reachable: true };
  } catch (error) {
    check = {
      atMs: gateway.clock.monoMs(),
      reachable: false,
      detail: error instanceof Error ? error.message : String(error),
    };
  }
  gateway.engineCheck = check;
  return { reachable: check.reachable, detail: check.detail };
}
