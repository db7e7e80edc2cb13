import { existsSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { RecordedCall } from "../../fakes/telegram/index.js";
import type { GatewayProcess } from "./gateway-process.js";
import type { MessageVerdict, ReplyAudit } from "./reply-audit.js";
import { textsOf } from "./reply-audit.js";

/** What the report reads: the bench's runs and home, the fake's calls. */
export interface LostMessageSources {
  readonly runs: readonly GatewayProcess[];
  /** The root home: the journal is `journal.db` there. */
  readonly home: string;
  readonly profile: string;
  readonly calls: readonly RecordedCall[];
}

/**
 * Everything known of each lost message (and of each media reply whose file is missing), so
 * one failure (in CI, where no file is kept) says where it was dropped: which run each
 * `getUpdates` that returned its update went to and which offset confirmed it, every call that touched the message (reactions, drafts, failed sends),
 * its journal rows (entry, receipts, replies and their steps; read once the last run ended),
 * and every run's log lines that name it.
 */
export function lostMessageReport(audit: ReplyAudit, sources: LostMessageSources): string[] {
  const missing = [...audit.lost, ...audit.filesMissing];
  if (missing.length === 0) return [];
  const journal = journalRows(sources, missing);
  return missing.map((verdict) =>
    [
      `${verdict.outcome === "lost" ? "lost" : "file missing of"} ${verdict.message.id}: update ${verdict.message.updateId}, message ${verdict.message.messageId} in chat ${verdict.message.chatId}, sent ${timeOf(sources, verdict.message.sentAtMs)}`,
      ...updateCalls(verdict, sources).map((line) => `  telegram: ${line}`),
      ...messageCalls(verdict, sources).map((line) => `  telegram: ${line}`),
      ...(journal.get(verdict.message.updateId) ?? []).map((line) => `  journal: ${line}`),
      ...logMentions(verdict, sources, journal.entryIds.get(verdict.message.updateId) ?? []).map(
        (line) => `  log: ${line}`,
      ),
    ].join("\n"),
  );
}

/** `run 3 (+812 ms)`, `between runs 3 and 4`, or `before run 1`, for an epoch time. */
function timeOf(sources: LostMessageSources, atMs: number): string {
  for (const run of sources.runs) {
    const end = run.exitedAtMs ?? Number.POSITIVE_INFINITY;
    if (atMs >= run.spawnedAtMs && atMs <= end) {
      const ready = run.readyAtMs === undefined ? "" : `, serving since ${atMs - run.readyAtMs} ms`;
      return `during run ${run.run} (pid ${run.pid}, +${atMs - run.spawnedAtMs} ms${ready})`;
    }
  }
  const after = sources.runs.filter((run) => run.spawnedAtMs <= atMs).at(-1);
  return after === undefined ? "before run 1" : `after run ${after.run} ended`;
}

const describeCall = (sources: LostMessageSources, call: RecordedCall): string =>
  `#${call.seq} ${call.method} ${call.ok ? "ok" : `failed (${call.status} ${call.description ?? ""})`}${call.clientGone ? " to a closed connection" : ""} ${timeOf(sources, call.atMs)}`;

/** The getUpdates calls that returned the update, and the first whose offset confirmed it. */
function updateCalls(verdict: MessageVerdict, sources: LostMessageSources): string[] {
  const id = verdict.message.updateId;
  const polls = sources.calls.filter((c) => c.method === "getUpdates");
  const returned = polls.filter(
    (c) =>
      Array.isArray(c.result) && c.result.some((u: { update_id?: unknown }) => u.update_id === id),
  );
  const confirmed = polls.find((c) => Number(c.params.offset ?? 0) > id);
  return [
    ...(returned.length === 0 ? ["no getUpdates returned the update"] : []),
    ...returned.map(
      (c) =>
        `returned by ${describeCall(sources, c)} (offset ${String(c.params.offset ?? 0)}, ${(c.result as unknown[]).length} updates)`,
    ),
    confirmed === undefined
      ? "never confirmed by an offset"
      : `confirmed by ${describeCall(sources, confirmed)} (offset ${String(confirmed.params.offset)})`,
  ];
}

/** Every call that names the message: replies to it, its token, its reactions, drafts. */
function messageCalls(verdict: MessageVerdict, sources: LostMessageSources): string[] {
  const { chatId, messageId, token } = verdict.message;
  const touching = sources.calls.filter((call) => {
    if (String(call.params.chat_id) !== String(chatId)) return false;
    const reply = call.params.reply_parameters as { message_id?: unknown } | undefined;
    if (Number(reply?.message_id) === messageId) return true;
    if (call.method === "setMessageReaction" && Number(call.params.message_id) === messageId)
      return true;
    return textsOf(call).some((text) => text.includes(token));
  });
  if (touching.length === 0) return ["no call named the message (no reaction, reply, draft)"];
  return touching.map((call) => {
    const text = textsOf(call).join(" | ");
    const reaction =
      call.method === "setMessageReaction" ? ` ${JSON.stringify(call.params.reaction ?? [])}` : "";
    return `${describeCall(sources, call)}${reaction}${text === "" ? "" : ` ${JSON.stringify(text.slice(0, 80))}`}`;
  });
}

interface JournalFindings {
  /** Lines per update id. */
  get(updateId: number): string[] | undefined;
  readonly entryIds: Map<number, number[]>;
}

/** The journal rows of each lost update, read from the file (read-only). */
function journalRows(
  sources: LostMessageSources,
  lost: readonly MessageVerdict[],
): JournalFindings {
  const lines = new Map<number, string[]>();
  const entryIds = new Map<number, number[]>();
  const path = join(sources.home, "journal.db");
  const findings = { get: (id: number) => lines.get(id), entryIds };
  if (!existsSync(path)) {
    for (const v of lost) lines.set(v.message.updateId, [`no journal at ${path}`]);
    return findings;
  }
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const runOf = (owner: string): string => {
      const pid = Number(owner.split("/")[2]);
      const run = sources.runs.find((r) => r.pid === pid);
      return run === undefined ? owner : `run ${run.run}`;
    };
    for (const v of lost) {
      const key = `${sources.profile}:telegram:${v.message.updateId}`;
      const out: string[] = [];
      const receipt = db.prepare("SELECT entry_id, whole FROM receipts WHERE key = ?").get(key) as
        | { entry_id: number; whole: number }
        | undefined;
      const byMessage = db
        .prepare(
          "SELECT id, key, state, outcome, owner, received_at, started_at, finished_at FROM entries WHERE key = ? OR id = ? OR (json_extract(message, '$.chatId') = ? AND json_extract(message, '$.messageId') = ?)",
        )
        .all(
          key,
          receipt?.entry_id ?? -1,
          String(v.message.chatId),
          String(v.message.messageId),
        ) as {
        id: number;
        key: string;
        state: string;
        outcome: string | null;
        owner: string;
        received_at: number;
        started_at: number | null;
        finished_at: number | null;
      }[];
      out.push(
        receipt === undefined
          ? `no receipt ${key}`
          : `receipt ${key} -> entry ${receipt.entry_id}${receipt.whole === 1 ? " (whole)" : ""}`,
      );
      if (byMessage.length === 0) out.push("no entry for the update or the message");
      for (const entry of byMessage) {
        const at = (ms: number | null) => (ms === null ? "-" : timeOf(sources, ms));
        out.push(
          `entry ${entry.id} ${entry.key}: ${entry.state}${entry.outcome === null ? "" : ` (${entry.outcome})`}, owner ${runOf(entry.owner)}; received ${at(entry.received_at)}; started ${at(entry.started_at)}; finished ${at(entry.finished_at)}`,
        );
        const replies = db
          .prepare(
            "SELECT id, state, owner, attempts, last_error, text, created_at, closed_at FROM replies WHERE entry_id = ?",
          )
          .all(entry.id) as {
          id: string;
          state: string;
          owner: string;
          attempts: number;
          last_error: string | null;
          text: string;
          created_at: number;
          closed_at: number | null;
        }[];
        if (replies.length === 0) out.push(`entry ${entry.id}: no reply recorded`);
        for (const reply of replies) {
          const steps = db
            .prepare("SELECT key, result FROM reply_steps WHERE reply_id = ? ORDER BY rowid")
            .all(reply.id) as { key: string; result: string }[];
          out.push(
            `reply ${reply.id}: ${reply.state}, owner ${runOf(reply.owner)}, ${reply.attempts} attempts, created ${timeOf(sources, reply.created_at)}${reply.closed_at === null ? "" : `, closed ${timeOf(sources, reply.closed_at)}`}${reply.last_error === null ? "" : `, last error ${reply.last_error}`}; text ${JSON.stringify(reply.text.slice(0, 60))}; steps ${steps.map((s) => `${s.key}=${s.result}`).join(", ") || "none"}`,
          );
        }
      }
      lines.set(v.message.updateId, out);
      entryIds.set(
        v.message.updateId,
        byMessage.map((e) => e.id),
      );
    }
  } finally {
    db.close();
  }
  return findings;
}

/** Every run's log lines naming the message (its id, update id, token or journal entries). */
function logMentions(
  verdict: MessageVerdict,
  sources: LostMessageSources,
  entryIds: readonly number[],
): string[] {
  const { messageId, updateId, token } = verdict.message;
  const needles = [
    `"messageId":"${messageId}"`,
    `"updateId":${updateId},`,
    `"updateId":${updateId}}`,
    `"receiptId":"${updateId}"`,
    token,
    ...entryIds.map((id) => `"entryId":${id},`),
    ...entryIds.map((id) => `"entryId":${id}}`),
  ];
  const found = sources.runs.flatMap((run) =>
    run.output
      .split("\n")
      .filter((line) => needles.some((needle) => line.includes(needle)))
      .map((line) => `run ${run.run}: ${line}`),
  );
  return found.length === 0 ? ["no log line names the message"] : found;
}
