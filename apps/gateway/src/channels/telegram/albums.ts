import type { Update } from "grammy/types";

/**
 * Updates handed on together: one update, or every update of one album (the messages of one
 * sender in one chat sharing a `media_group_id`), in update order. Its receipt id is its first
 * update's.
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
 * update wherever they stand; every other update is a unit of its own. Units come in the
 * order of their first update.
 */
export function groupUpdates(updates: readonly Update[]): UpdateUnit[] {
  const units: Update[][] = [];
  const byAlbum = new Map<string, Update[]>();
  for (const update of updates) {
    const album = albumOf(update);
    const unit = album === undefined ? undefined : byAlbum.get(album);
    if (unit !== undefined) {
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
 * {@link groupUpdates}) are: every update below the first unhandled unit, but never the start
 * of a handled album that has updates at or above that point. Otherwise a restart would be
 * offered the album's tail without its head and record it as a new message, a second time;
 * offered from the head again, the album maps to the same receipt id, which the journal knows
 * (docs/durability.md). `current` is kept when nothing can be confirmed beyond it.
 */
export function confirmableOffset(
  units: readonly UpdateUnit[],
  handled: number,
  current: number,
): number {
  const pending = units.slice(handled);
  if (pending.length === 0) {
    const last = Math.max(...units.flat().map((u) => u.update_id));
    return Number.isFinite(last) ? Math.max(current, last + 1) : current;
  }
  let offset = Math.min(...pending.flat().map((u) => u.update_id));
  const done = units.slice(0, handled);
  for (let lowered = true; lowered; ) {
    lowered = false;
    for (const unit of done) {
      const first = Math.min(...unit.map((u) => u.update_id));
      if (first < offset && unit.some((u) => u.update_id >= offset)) {
        offset = first;
        lowered = true;
      }
    }
  }
  return Math.max(current, offset);
}
