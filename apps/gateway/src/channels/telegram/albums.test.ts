import fc from "fast-check";
import type { Update } from "grammy/types";
import { describe, expect, it } from "vitest";
import { albumOf, confirmableOffsets, endsInAlbum, groupUpdates } from "./albums.js";

/** An update in chat `chat` from user `from`, in album `group` when given. */
function update(id: number, group?: string, chat = 1, from = 7): Update {
  const message = {
    message_id: id,
    date: 0,
    chat: { id: chat, type: chat > 0 ? "private" : "supergroup" },
    from: { id: from, is_bot: false, first_name: `u${from}` },
  };
  return {
    update_id: id,
    message: group === undefined ? message : { ...message, media_group_id: group },
  } as unknown as Update;
}

const ids = (units: readonly (readonly Update[])[]): number[][] =>
  units.map((unit) => unit.map((u) => u.update_id));

describe("groupUpdates", () => {
  it("joins an album's updates into one unit and leaves others alone", () => {
    const units = groupUpdates([
      update(1),
      update(2, "a"),
      update(3, "a"),
      update(4, "a"),
      update(5),
    ]);
    expect(ids(units)).toEqual([[1], [2, 3, 4], [5]]);
  });

  it("starts another unit for an album's items past the album bound", () => {
    const items = [1, 2, 3, 4, 5].map((id) => update(id, "a"));
    expect(ids(groupUpdates(items, 2))).toEqual([[1, 2], [3, 4], [5]]);
    const twelve = Array.from({ length: 12 }, (_, i) => update(i + 1, "a"));
    expect(groupUpdates(twelve).map((unit) => unit.length)).toEqual([10, 2]);
  });

  it("joins an album's parts around another update into the unit of its first part", () => {
    const units = groupUpdates([update(1, "a"), update(2), update(3, "a")]);
    expect(ids(units)).toEqual([[1, 3], [2]]);
  });

  it("keeps two albums apart, and one group id in two chats apart", () => {
    const units = groupUpdates([
      update(1, "a"),
      update(2, "b"),
      update(3, "a"),
      update(4, "a", 2),
      update(5, "b"),
    ]);
    expect(ids(units)).toEqual([[1, 3], [2, 5], [4]]);
  });

  it("keeps two senders' albums in one group apart, even with one group id, interleaved", () => {
    const units = groupUpdates([
      update(1, "a", -5, 7),
      update(2, "a", -5, 8),
      update(3, "a", -5, 7),
      update(4, "a", -5, 8),
    ]);
    expect(ids(units)).toEqual([
      [1, 3],
      [2, 4],
    ]);
  });

  it("keeps two channels posting in one group through the same service user apart", () => {
    const asChannel = (id: number, channel: number): Update => {
      const base = update(id, "a", -5, 136817688);
      const message = { ...base.message, sender_chat: { id: channel, type: "channel" } };
      return { ...base, message } as unknown as Update;
    };
    const units = groupUpdates([asChannel(1, -101), asChannel(2, -102), asChannel(3, -101)]);
    expect(ids(units)).toEqual([[1, 3], [2]]);
  });

  it("keeps every update exactly once, in order within a unit (property)", () => {
    const item = fc.tuple(
      fc.option(fc.constantFrom("a", "b", "c"), { nil: undefined }),
      fc.constantFrom(7, 8),
    );
    const batch = fc
      .array(item, { maxLength: 30 })
      .map((items) => items.map(([group, from], i) => update(i + 1, group, -5, from)));
    fc.assert(
      fc.property(batch, (updates) => {
        const units = groupUpdates(updates);
        expect(
          units
            .flat()
            .map((u) => u.update_id)
            .sort((a, b) => a - b),
        ).toEqual(updates.map((u) => u.update_id));
        for (const unit of units) {
          const keys = new Set(unit.map(albumOf));
          expect(keys.size).toBe(1);
          expect(new Set(unit.map((u) => u.message?.from?.id)).size).toBe(1);
          if (unit.length > 1) expect(albumOf(unit[0]!)).toBeDefined();
        }
      }),
    );
  });
});

describe("endsInAlbum", () => {
  it.each([
    [[update(1), update(2, "a")], true],
    [[update(1, "a"), update(2)], false],
    [[], false],
  ] as const)("%# → %s", (updates, expected) => {
    expect(endsInAlbum(updates)).toBe(expected);
  });
});

describe("confirmableOffsets", () => {
  it("confirms everything once every unit is handled", () => {
    const units = groupUpdates([update(7), update(8, "a"), update(9, "a")]);
    expect(confirmableOffsets(units, 7)[2]).toBe(10);
  });

  it("confirms up to the first unhandled unit", () => {
    const units = groupUpdates([update(7), update(8, "a"), update(9, "a"), update(10)]);
    expect(confirmableOffsets(units, 7)[1]).toBe(8);
    expect(confirmableOffsets(units, 7)[2]).toBe(10);
  });

  it("confirms a handled album's head below an unhandled update, its tail only later", () => {
    // album [1, 3] handled, update 2 not yet: 3 is offered again, and known by its update id
    const units = groupUpdates([update(1, "a"), update(2), update(3, "a")]);
    expect(confirmableOffsets(units, 1)[1]).toBe(2);
    expect(confirmableOffsets(units, 1)[2]).toBe(4);
  });

  it("never goes back below the current offset", () => {
    expect(confirmableOffsets(groupUpdates([update(3)]), 3)[0]).toBe(3);
    expect(confirmableOffsets([], 5)[0]).toBe(5);
  });

  it("after any crash point, confirms no update of a unit not handled, and every update below it (property)", () => {
    const batch = fc
      .array(fc.option(fc.constantFrom("a", "b", "c"), { nil: undefined }), {
        minLength: 1,
        maxLength: 30,
      })
      .map((groups) => groups.map((group, i) => update(i + 1, group)));
    fc.assert(
      fc.property(batch, fc.nat(), (updates, cut) => {
        const units = groupUpdates(updates);
        const handled = cut % (units.length + 1);
        const offsets = confirmableOffsets(units, 1);
        expect(offsets).toHaveLength(units.length + 1);
        // Never lower for more handled units: the poller only ever moves its offset on.
        for (let i = 1; i < offsets.length; i++) {
          expect(offsets[i]).toBeGreaterThanOrEqual(offsets[i - 1] as number);
        }
        const offset = offsets[handled] as number;
        const pending = new Set(units.slice(handled).flat());
        for (const u of updates) {
          // below the offset: confirmed, so handled; at or above it: offered again
          if (u.update_id < offset) expect(pending.has(u)).toBe(false);
        }
        const firstPending = Math.min(...[...pending].map((u) => u.update_id));
        expect(offset).toBe(Number.isFinite(firstPending) ? firstPending : updates.length + 1);
      }),
    );
  });
});
