import type { InboundMessage } from "../channels/types.js";
import { clearLeftoverStatuses } from "../durable/leftover-statuses.js";
import type { JournalEntry, OutboxRecord } from "../durable/types.js";
import { messageReaction } from "../pipeline/react.js";
import type { KeptTurn } from "../pipeline/types.js";
import { buildSessionKey } from "../session/key.js";
import { channelFor, type GatewayCore, targetOf, track } from "./core.js";
import { dispatch } from "./dispatch.js";
import { dispatchRecoveredRun, recordRecoveredRun, rerunsCutOffRun } from "./scheduled-runs.js";

/**
 * What cut a turn off: a crash or a stop (`restart`, told after the start), or the PostgreSQL
 * store not answering at its end (`store`, told once it answers again; docs/store.md).
 */
export type CutOffBy = "restart" | "store";

/** The line a chat gets for a turn a crash, a stop or the store's outage cut off. */
export function interruptedText(message: InboundMessage, by: CutOffBy = "restart"): string {
  const what = by === "restart" ? "The gateway restarted" : "The gateway's database was down";
  if (message.scheduled !== undefined) {
    // Only a run already run again once is told (a cut-off run runs again once: scheduled-runs).
    const cause = by === "restart" ? "by a restart" : "while the gateway's database was down";
    return `⚠️ Task ${message.scheduled.taskId} was cut off ${cause} again, after it had been run again once; it is not run a third time. Commands it started may have run in part; it runs again at its next time (/tasks has "Run now").`;
  }
  const preview = message.text.length > 60 ? `${message.text.slice(0, 57)}…` : message.text;
  return `⚠️ ${what} while working on your message “${preview}”. It did not finish, and commands it started may have run in part. Send it again if you still want it.`;
}

/**
 * Takes over what a dead (or stopped) process left: first its status messages still
 * showing are cleared (before anything else goes to their chats), then it dispatches its
 * messages that ran no command and puts a notice for each cut-off turn in the outbox;
 * resolves with the replies to resume (those notices included).
 */
export async function recover(gateway: GatewayCore): Promise<OutboxRecord[]> {
  await clearLeftoverStatuses({
    journal: gateway.journal,
    statusFor: (profile, platform) => channelFor(gateway, profile, platform)?.status,
    rerunInterrupted: gateway.config.rerunInterrupted,
    logger: gateway.logger,
  });
  const entries = await gateway.journal.takeOver();
  const notices = await recoverEntries(gateway, entries);
  const replies = await gateway.journal.takeOverReplies();
  if (entries.length > 0 || replies.length > 0) {
    gateway.logger.info(
      {
        messages: entries.filter((e) => e.state === "received").length,
        interrupted: entries.filter((e) => e.state === "started").length,
        replies: replies.length,
      },
      "recovering what the previous process left",
    );
  }
  return [...notices, ...replies];
}

/**
 * {@link recoverEntry} for each of `entries` (taken over, oldest first); the items of an album
 * whose turn was cut off share one notice. Resolves with the notices recorded.
 */
export async function recoverEntries(
  gateway: GatewayCore,
  entries: readonly JournalEntry[],
): Promise<OutboxRecord[]> {
  const notices: OutboxRecord[] = [];
  const cutAlbums = new Map<string, JournalEntry[]>();
  for (const entry of entries) {
    const album = entry.message.album;
    if (album !== undefined && entry.state === "started" && !gateway.config.rerunInterrupted) {
      const key = JSON.stringify([entry.message.profile, entry.message.platform, album.key]);
      const group = cutAlbums.get(key);
      if (group === undefined) cutAlbums.set(key, [entry]);
      else group.push(entry);
      continue;
    }
    const notice = await recoverEntry(gateway, entry);
    if (notice !== undefined) notices.push(notice);
  }
  for (const [first, ...others] of cutAlbums.values()) {
    if (first === undefined) continue;
    const notice = await recoverEntry(
      gateway,
      first,
      others.map((entry) => entry.id),
    );
    if (notice !== undefined) notices.push(notice);
  }
  return notices;
}

/**
 * Dispatches a recorded message whose turn never started (an album's item: to its album, which
 * gathers the items that come after the restart too), or records the notice of a cut-off
 * turn; `merged`: the other entries of that turn (an album's items), closed with it; `by`:
 * what cut it off, for the notice. One {@link JournalEntry.handed} runs as just received.
 */
export async function recoverEntry(
  gateway: GatewayCore,
  entry: Pick<JournalEntry, "id" | "state" | "message" | "handed">,
  merged: readonly number[] = [],
  by: CutOffBy = "restart",
): Promise<OutboxRecord | undefined> {
  const { message } = entry;
  const channel = channelFor(gateway, message.profile, message.platform);
  const runtime = gateway.runtimes.get(message.profile);
  if (channel === undefined || runtime === undefined) {
    gateway.logger.warn(
      { profile: message.profile, platform: message.platform },
      "recorded message for a channel that is no longer configured; dropped",
    );
    await gateway.journal.finished([entry.id, ...merged], "interrupted");
    return;
  }
  // A cut-off scheduled run runs again once, whatever `rerunInterrupted` says (scheduled-runs).
  const cutOff =
    entry.state === "started" && message.scheduled !== undefined
      ? await rerunsCutOffRun(gateway, message)
      : undefined;
  if (cutOff === "task_gone") {
    // Its task was deleted: nobody waits for its answer.
    await gateway.journal.finished([entry.id, ...merged], "interrupted");
    return undefined;
  }
  if (
    entry.state === "received" ||
    cutOff === "rerun" ||
    (cutOff === undefined && gateway.config.rerunInterrupted)
  ) {
    const recovered = entry.state === "received" && entry.handed === true ? "handed" : true;
    if (message.album !== undefined) {
      gateway.albums.add({ channel, message, entryId: entry.id, recovered });
      return undefined;
    }
    gateway.albums.closeSenderOf(message);
    if (message.scheduled !== undefined) dispatchRecoveredRun(gateway, channel, message, entry.id);
    else void dispatch(gateway, channel, message, entry.id, recovered);
    return undefined;
  }
  await recordRecoveredRun(gateway, message, "interrupted");
  // The notice is a reply like any other: recorded with the entry's close in one
  // transaction, delivered (and retried) by the outbox, never sent twice.
  const sessionKey = buildSessionKey(message, runtime.profile);
  const notice = await gateway.outbox.record(
    {
      profile: message.profile,
      platform: message.platform,
      sessionKey,
      slot: runtime.slotFor(sessionKey),
      target: targetOf(message),
      text: interruptedText(message, by),
    },
    entry.id,
    merged,
  );
  // The cut-off turn's `working` gives way to `failed`, as its notice says.
  messageReaction({
    channel,
    profile: runtime.profile,
    message,
    recovered: true,
    log: gateway.logger,
    signal: gateway.outbox.signal,
  })?.set("failed");
  return notice;
}

/**
 * Hands kept `turn` on as a start's recovery would hand on its entry: closed meanwhile, it is
 * dropped; one that ran no command, or any with `recovery.rerunInterrupted`, runs again; one
 * cut off after its first command gets the notice of a cut-off turn (saying the database was
 * down) through the outbox, its entry closed with it. Left alone while the gateway stops (the
 * next start takes it over). Rejects (nothing done) when the journal does not answer.
 */
export async function resumeKeptTurn(gateway: GatewayCore, turn: KeptTurn): Promise<void> {
  const { message, entryId, mergedEntryIds } = turn;
  const found = await gateway.journal.entryState(entryId);
  // Closed by the turn's own reply, recorded although the answer to its COMMIT was lost (the
  // turn was kept as if it had failed): the reply is this process's to send, and nothing else
  // would send it before the next start.
  if (found?.state === "done" && found.mine && gateway.accepting) {
    const mine = (await gateway.journal.replies({ entryId })).filter(
      (reply) => reply.state === "pending" && reply.owner === gateway.journal.owner,
    );
    if (mine.length > 0) track(gateway, gateway.outbox.resume(mine));
    return;
  }
  // Closed meanwhile; taken over by another replica while this one could not reach the
  // database (docs/cluster.md); or the gateway stops, and the next start takes it over.
  if (found === undefined || found.state === "done" || !found.mine || !gateway.accepting) return;
  const channel = channelFor(gateway, message.profile, message.platform);
  // A turn whose start the journal took although it was told the write failed (its answer
  // was lost) ran no command: it runs again, as one that never started.
  const ranNothing = found.state === "received" || !turn.commandMayHaveRun;
  if (channel !== undefined && (ranNothing || gateway.config.rerunInterrupted)) {
    if (message.scheduled !== undefined) dispatchRecoveredRun(gateway, channel, message, entryId);
    else void dispatch(gateway, channel, message, entryId, true, mergedEntryIds);
    return;
  }
  const notice = await recoverEntry(
    gateway,
    { id: entryId, state: found.state, message },
    mergedEntryIds,
    "store",
  );
  if (notice !== undefined) track(gateway, gateway.outbox.resume([notice]));
}
