import { Transform } from "node:stream";
import { planMedia, resumePlan } from "@mediagate/media";
import { directoryUsage } from "@mediagate/sandbox";
import type {
  ConsoleSource,
  ContainerView,
  DeliveryView,
  OverviewView,
  PreviewFile,
  ResetAnswer,
  SessionView,
  WebActor,
} from "@mediagate/web";
import type { ChannelAdapter, Platform } from "../channels/types.js";
import { describeResetConfirm, resetSession } from "../commands/reset.js";
import { describeStop, stoppedElsewhereText, stopSession } from "../commands/stop.js";
import type { Journal, OutboxRecord } from "../durable/types.js";
import type { HealthReport } from "../health/server.js";
import type { Logger } from "../log.js";
import type { PipelineServices } from "../pipeline/types.js";
import type { ProfileRuntime } from "../profiles/profile-runtime.js";
import type { LiveSessions } from "../session/live-sessions.js";
import { approvalsView } from "./approvals-source.js";
import { deliveryView } from "./deliveries-source.js";
import type { LogRing } from "./log-ring.js";
import { taskAction, tasksView } from "./tasks-source.js";
import { usageView } from "./usage-source.js";

/** What the console's source reads of the gateway (read-only, but for the actions). */
export interface ConsoleSourceDeps {
  readonly runtimes: ReadonlyMap<string, ProfileRuntime>;
  readonly services: PipelineServices;
  readonly live: LiveSessions;
  readonly ring: LogRing | undefined;
  readonly journal: Journal;
  readonly logger: Logger;
  readonly health: () => Promise<HealthReport>;
  readonly channelFor: (profile: string, platform: Platform) => ChannelAdapter | undefined;
}

/**
 * The gateway seen by the web console (docs/web-console.md). It reads the channels' health,
 * the turn queue, the live sessions, the sandboxes and the journal; previews go through the
 * delivery's own plan and credential policy; each action calls the code the chat commands
 * and the CLI call (`stopSession`, `resetSession`, `Sandbox#reapOrphans`).
 */
export function createConsoleSource(deps: ConsoleSourceDeps): ConsoleSource {
  const { runtimes, services, live, ring, journal, logger } = deps;
  /** Paths tried for missing files, by reply and index (they do not change). */
  const triedCache = new Map<string, readonly string[]>();

  const runtimeOf = (sessionKey: string): ProfileRuntime => {
    const session = live.get(sessionKey);
    const runtime = session === undefined ? undefined : runtimes.get(session.profile);
    if (runtime === undefined)
      throw new Error(`no session ${sessionKey} is known to this gateway process`);
    return runtime;
  };

  const limitsOf = (record: OutboxRecord) => {
    const channel = deps.channelFor(record.profile, record.platform);
    return channel === undefined
      ? undefined
      : (channel.limitsFor?.(record.target) ?? channel.limits);
  };

  async function tried(
    record: OutboxRecord,
    index: number,
    path: string,
  ): Promise<readonly string[]> {
    const key = `${record.id}/${index}`;
    const known = triedCache.get(key);
    if (known !== undefined) return known;
    const runtime = runtimes.get(record.profile);
    const limits = limitsOf(record);
    if (runtime === undefined || limits === undefined) return [];
    // The same planning as the delivery's, for this one tag: where it looked, and what it found.
    const plan = await planMedia(
      `MEDIA:${path}`,
      runtime.translateContext(record.slot, record.sessionKey),
      limits,
    ).catch(() => undefined);
    if (plan === undefined) return [];
    await plan.dispose();
    const outcome = plan.outcomes[0];
    const paths =
      outcome === undefined
        ? []
        : outcome.candidates.map((c) => `${c.path} (${c.source}: ${c.result})`);
    if (triedCache.size > 1000) triedCache.clear();
    triedCache.set(key, paths);
    return paths;
  }

  return {
    async overview(): Promise<OverviewView> {
      const health = await deps.health();
      return {
        status: health.status,
        channels: health.channels.map((c) => ({ ...c, alive: c.state === "up" })),
        engine: health.engine,
        journal: health.journal,
        ...(health.store === undefined ? {} : { store: health.store }),
        ...(health.cluster === undefined ? {} : { cluster: health.cluster }),
        queue: health.queue,
        outbox: health.outbox,
        turnsPerMinute: live.turnsPerMinute(),
        recentErrors: (ring?.query({ level: "warn", limit: 10 }) ?? []).reverse().map((l) => ({
          timeMs: l.timeMs,
          level: l.level,
          msg: l.msg,
          sessionKey: l.sessionKey,
        })),
      };
    },

    sessions(): SessionView[] {
      return live.list().map((s) => {
        const queued = services.queue.queued(s.sessionKey);
        const running = services.queue.isRunning(s.sessionKey);
        return {
          sessionKey: s.sessionKey,
          profile: s.profile,
          platform: s.platform,
          chat: s.chat,
          user: s.user,
          slot: s.slot,
          lastActivityMs: s.lastActivityMs,
          state: running ? "running" : queued > 0 ? "queued" : "idle",
          queued,
          turnStartedMs: running ? s.turnStartedMs : undefined,
          doing: running ? s.doing : undefined,
        };
      });
    },

    async containers(): Promise<ContainerView[]> {
      const seen = new Set<string>();
      const rows: ContainerView[] = [];
      for (const runtime of runtimes.values()) {
        for (const c of await runtime.sandbox.inventory()) {
          if (seen.has(c.id)) continue;
          seen.add(c.id);
          const usage = c.slotDir === undefined ? undefined : await directoryUsage(c.slotDir);
          rows.push({
            id: c.id,
            profile: c.profile,
            slot: c.slot,
            state: c.state,
            image: c.image,
            createdMs: c.createdAt.getTime(),
            diskBytes: usage?.bytes,
            processes: c.processes,
            orphan: c.orphan !== undefined,
            orphanReason: c.orphan,
          });
        }
      }
      return rows;
    },

    async deliveries(limit: number): Promise<DeliveryView[]> {
      const records = await journal.replies({ limit });
      const views: DeliveryView[] = [];
      for (const record of records) views.push(await deliveryView(record, tried));
      return views;
    },

    logs(query) {
      return ring?.query(query) ?? [];
    },

    async preview(replyId, index, maxBytes): Promise<PreviewFile | undefined> {
      const [record] = await journal.replies({ id: replyId });
      const item = record?.plan?.items[index];
      if (record === undefined || item?.status !== "ready" || record.state !== "delivered")
        return undefined;
      const runtime = runtimes.get(record.profile);
      const limits = limitsOf(record);
      if (runtime === undefined || limits === undefined) return undefined;
      // The delivery's own resume: the tagged path translated, checked by the credential
      // policy as written and as resolved, opened without following links; only this item.
      const { plan } = await resumePlan(
        record.plan!,
        runtime.translateContext(record.slot, record.sessionKey),
        limits,
        { reopen: (path) => path === item.path },
      );
      const outcome = plan.outcomes[index];
      if (outcome?.status !== "ready" || outcome.path !== item.path) {
        await plan.dispose();
        return undefined;
      }
      const head = outcome.size > maxBytes;
      if (head && !outcome.mime.startsWith("text/")) {
        await plan.dispose();
        return undefined;
      }
      const stream = head
        ? outcome.file.stream().pipe(firstBytes(maxBytes))
        : outcome.file.stream();
      return {
        mime: outcome.mime,
        size: Math.min(outcome.size, maxBytes),
        stream,
        close: () => plan.dispose(),
      };
    },

    async stopTurn(sessionKey: string, by: WebActor): Promise<string> {
      const holder = await services.sessions
        ?.askHolder({ profile: runtimeOf(sessionKey).name, sessionKey })
        .catch(() => undefined);
      if (holder !== undefined) {
        logger.info(
          { by: by.id, address: by.address, sessionKey, holder },
          "web console: /stop asked of the session's replica",
        );
        return stoppedElsewhereText(holder);
      }
      const summary = await stopSession(runtimeOf(sessionKey), services, sessionKey);
      logger.info(
        { by: by.id, address: by.address, sessionKey, ...summary },
        "web console: /stop done",
      );
      return describeStop(summary);
    },

    async resetSlot(sessionKey: string, confirm: boolean, by: WebActor): Promise<ResetAnswer> {
      const result = await resetSession(runtimeOf(sessionKey), services, sessionKey, confirm);
      // With replicas, the session's turn runs on its holder: it is stopped there too.
      if (result.status === "done") {
        await services.sessions
          ?.askHolder({ profile: runtimeOf(sessionKey).name, sessionKey })
          .catch(() => undefined);
      }
      logger.info(
        { by: by.id, address: by.address, sessionKey, confirm, result: result.status },
        "web console: /reset done",
      );
      return result.status === "needs_confirm"
        ? { status: "needs_confirm", text: describeResetConfirm(result.slot, result.sharedBy) }
        : result;
    },

    usage: (days: number) => usageView(runtimes, days),

    approvals: () => approvalsView(runtimes),
    tasks: () => tasksView(runtimes),

    taskAction: (profile, id, action, by) =>
      taskAction(runtimes, services.schedules, logger, { profile, id, action, by }),

    async reapOrphans(by: WebActor): Promise<string> {
      const lines: string[] = [];
      for (const runtime of runtimes.values()) {
        const result = await runtime.sandbox.reapOrphans();
        const shown = (id: string) =>
          id.startsWith("/") ? `slot directory ${id}` : id.slice(0, 12);
        for (const id of result.removed)
          lines.push(`reaped ${shown(id)} (profile ${runtime.name})`);
        for (const f of result.failed)
          lines.push(`failed ${shown(f.id)} (profile ${runtime.name}): ${f.error}`);
        logger.info(
          { by: by.id, address: by.address, profile: runtime.name, ...result },
          "web console: orphans reaped",
        );
      }
      return lines.length === 0 ? "Nothing to reap." : lines.join("\n");
    },

    onChange(listener) {
      const stopLive = live.listen(listener);
      const stopRing = ring?.listen(() => listener("logs"));
      return () => {
        stopLive();
        stopRing?.();
      };
    },
  };
}

/** Passes the first `max` bytes, then ends. */
function firstBytes(max: number): Transform {
  let left = max;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (left <= 0) return done();
      const part = chunk.subarray(0, left);
      left -= part.length;
      this.push(part);
      if (left <= 0) this.push(null);
      done();
    },
  });
}
