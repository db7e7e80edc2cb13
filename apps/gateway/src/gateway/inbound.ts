import { accessOf } from "../access-control/access.js";
import type { ChannelAdapter, InboundMessage, InboundOptions } from "../channels/types.js";
import { PartlyRecordedError, StorageError } from "../durable/errors.js";
import type { RecordResult } from "../durable/types.js";
import { PostgresStoreError } from "../postgres/errors.js";
import type { GatheredAlbum } from "./albums.js";
import { type GatewayCore, targetOf, track } from "./core.js";
import { dispatch } from "./dispatch.js";

/** The line a chat gets when its message cannot be recorded (the journal's disk). */
export const NotRecordedText =
  "⚠️ Your message could not be saved: the gateway's disk is full or failing. It will be answered once it can be saved; no need to send it again.";

/**
 * The line a chat gets when its message cannot be recorded because the journal's PostgreSQL
 * server is not reachable: no disk is at fault, and the platform's redelivery heals it.
 */
export const NotRecordedUnreachableText =
  "⚠️ Your message could not be saved: the gateway's database is not reachable. It will be answered once it can be saved; no need to send it again.";

/**
 * The line a chat gets when its message cannot be recorded because the journal is damaged:
 * nothing heals that by itself, so nothing is promised.
 */
export const NotRecordedDamagedText =
  "⚠️ Your message could not be saved: the gateway's journal is damaged and its operator has to replace it. It may not be answered; if no reply comes, send it again later.";

/** {@link receive}, counted by `Gateway.idle` from the moment the message arrives. */
export function received(
  gateway: GatewayCore,
  channel: ChannelAdapter,
  message: InboundMessage,
  options?: InboundOptions,
): Promise<void> {
  const receiving = receive(gateway, channel, message, options);
  track(
    gateway,
    receiving.catch(() => {}),
  );
  return receiving;
}

/**
 * The channels' message handler: the message is recorded in the journal before it returns
 * (so before the platform is told it arrived). A redelivered message already recorded is
 * not run again. When the journal cannot be written the message is not confirmed (the
 * rejection tells the channel) and its chat is told once. A merged message some of whose
 * receipts were recorded with another message is not recorded and rejects with
 * {@link PartlyRecordedError}: its channel hands the rest on alone. An album's item
 * (`message.album`) waits for the rest of its album; any other message first runs the open
 * albums of its sender in that chat, so it comes after them. A message the channel handed on
 * before the one ahead of it was handled (`options.after`) is recorded at once and runs only
 * once that one was handed on; when that one will not be in this process, this one stays
 * recorded, not run, and the next start runs it (docs/durability.md).
 */
export async function receive(
  gateway: GatewayCore,
  channel: ChannelAdapter,
  message: InboundMessage,
  options: InboundOptions = {},
): Promise<void> {
  if (!gateway.accepting)
    throw new Error("the gateway is stopping; the message is left unconfirmed");
  let recorded: RecordResult;
  try {
    recorded = await gateway.journal.record(message);
  } catch (error) {
    await notRecorded(gateway, channel, message, error);
    throw error;
  }
  if (gateway.journalProblem !== undefined) {
    gateway.logger.info("journal writable again");
    gateway.journalProblem = undefined;
    gateway.kept.storeAnswered();
  }
  if (recorded.unrecorded !== undefined) {
    throw new PartlyRecordedError(message.receiptId, recorded.unrecorded, recorded.id);
  }
  if (!recorded.fresh) {
    gateway.logger.info(
      { profile: message.profile, platform: message.platform, receiptId: message.receiptId },
      "message redelivered by the platform was recorded before; not run again",
    );
    return;
  }
  if (options.after !== undefined && !(await options.after)) return;
  if (message.album !== undefined) {
    gateway.albums.add({ channel, message, entryId: recorded.id, recovered: false });
    return;
  }
  gateway.albums.closeSenderOf(message);
  void dispatch(gateway, channel, message, recorded.id);
}

/**
 * Runs an album whose items were recorded one by one (`AlbumGatherer`) as one message,
 * or, when none of its items is for the bot (a group album without a mention), closes their
 * entries without running anything.
 */
export function runAlbum(gateway: GatewayCore, album: GatheredAlbum): void {
  const { message, entryId, merged } = album;
  const fields = {
    profile: message.profile,
    platform: message.platform,
    receiptIds: message.receiptIds ?? [message.receiptId],
  };
  if (!album.addressed) {
    gateway.logger.debug(fields, "album not for the bot (no item addresses it); ignored");
    void gateway.journal.finished([entryId, ...merged], "refused").catch((error: unknown) => {
      gateway.logger.error({ err: error, ...fields }, "could not close the album's entries");
    });
    return;
  }
  if (merged.length > 0) gateway.logger.info(fields, "album items run as one message");
  void dispatch(gateway, album.channel, message, entryId, album.recovered, merged);
}

export async function notRecorded(
  gateway: GatewayCore,
  channel: ChannelAdapter,
  message: InboundMessage,
  error: unknown,
): Promise<void> {
  const detail = error instanceof Error ? error.message : String(error);
  gateway.journalProblem = detail;
  const damaged = error instanceof StorageError && error.damaged;
  gateway.logger.error(
    {
      err: error,
      profile: message.profile,
      platform: message.platform,
      receiptId: message.receiptId,
    },
    damaged
      ? "message not recorded: the journal is damaged (see the error for the way out); it stays unconfirmed"
      : "message not recorded: the journal cannot be written; it stays unconfirmed",
  );
  const key = `${message.profile}:${message.platform}:${message.receiptId}`;
  const runtime = gateway.runtimes.get(message.profile);
  const allowed =
    runtime !== undefined && accessOf(runtime.profile, message.platform, message.userId).allowed;
  if (!allowed || gateway.toldNotRecorded.has(key)) return;
  if (gateway.toldNotRecorded.size > 10_000) gateway.toldNotRecorded.clear();
  gateway.toldNotRecorded.add(key);
  if (!(error instanceof StorageError)) return;
  const unreachable = error.cause instanceof PostgresStoreError && error.cause.unreachable;
  const notice = damaged
    ? NotRecordedDamagedText
    : unreachable
      ? NotRecordedUnreachableText
      : NotRecordedText;
  await channel.sendText(targetOf(message), notice).catch((sendError: unknown) => {
    gateway.logger.warn({ err: sendError }, "could not tell the chat its message was not saved");
  });
}
