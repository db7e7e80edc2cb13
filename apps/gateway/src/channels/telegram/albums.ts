import type { Update } from "grammy/types";
import { Defaults } from "../../defaults.js";

/**
 * Updates handed on together: one update, or every update of one album (the messages of one
 * sender in one chat sharing a `media_group_id`), in update order. Its receipt ids are its
 * updates' ids, the first one naming it.
 */
export type UpdateUnit = readonly Update[];

/**
 * The album an update belongs to, if any: `<chat id>:<from id>:<sender chat id>:<media_group_id>`
 * (an id it lacks is empty). The sender is part of the key, so two members of one group never
 * share an album whatever group id their messages carry: one member's files never end up in
 * another member's message. Both sender ids count because several senders share one `from`
 * (channels posting in a group all come from the same service user).
 */
export function albumOf(update: Update): string | undefined {
  const message = update.message ?? update.channel_post;
  if (message?.media_group_id === undefined) return undefined;
  const from = message.from?.id ?? "";
  const senderChat = message.sender_chat?.id ?? "";
  return `${message.chat.id}:${from}:${senderChat}:${message.media_group_id}`;
}

/**
 * Splits one getUpdates answer into units: an album's updates join the unit of its first
 * update wherever they stand, up to `maxItems` (`Defaults.telegram.albumMaxItems`; the next
 * item starts a unit of its own); every other update is a unit of its own. Units come in the
 * order of their first update.
 */
export function groupUpdates(
  updates: readonly Update[],
  maxItems: number = Defaults.telegram.albumMaxItems,
): UpdateUnit[] {
  const units: Update[][] = [];
  const byAlbum = new Map<string, Update[]>();
  for (const update of updates) {
    const album = albumOf(update);
    const unit = album === undefined ? undefined : byAlbum.get(album);
    if (unit !== undefined && unit.length < maxItems) {
      unit.push(update);
      continue;
    }
    const fresh = [update];
    units.push(fresh);
    if (album !== undefined) byAlbum.set(album, fresh);
  }
  return units;
}

/**
 * Whether an answer may have stopped partway through an album: its last update is part of
 * one. Telegram hands an album's messages over as they arrive, so the rest may be a moment
 * behind; the poller asks once more before handing the album on.
 */
export function endsInAlbum(updates: readonly Update[]): boolean {
  const last = updates.at(-1);
  return last !== undefined && albumOf(last) !== undefined;
}

/**
 * The `offset` that confirms what is recorded once the first `handled` of `units` (from
 * {@link groupUpdates}) are, for every `handled` from 0 to `units.length` (the array's index):
 * every update below the lowest one of a unit not handled yet, or all of them when every unit
 * is. No update of a unit not handled is ever confirmed. A handled album may have items above
 * that point; offered again after a crash they are known by their own update ids (the journal
 * records a message by each) and not run again (docs/durability.md). `current` is kept when
 * nothing can be confirmed beyond it.
 *
 * All at once, from the last unit back, because the poller confirms after each unit: asked
 * one `handled` at a time, the work was quadratic in the answer's length (1 % of the main
 * thread's busy samples in bench:e2e's text-only windows, about 43 updates an answer).
 */
export function confirmableOffsets(units: readonly UpdateUnit[], current: number): number[] {
  let last = Number.NEGATIVE_INFINITY;
  for (const unit of units) for (const u of unit) last = Math.max(last, u.update_id);
  const offsets = new Array<number>(units.length + 1);
  let lowestPending = Number.isFinite(last) ? last + 1 : current;
  offsets[units.length] = Math.max(current, lowestPending);
  for (let handled = units.length - 1; handled >= 0; handled--) {
    for (const u of units[handled] as UpdateUnit)
      lowestPending = Math.min(lowestPending, u.update_id);
    offsets[handled] = Math.max(current, lowestPending);
  }
  return offsets;
}
