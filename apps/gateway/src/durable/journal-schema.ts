import type { Migration } from "../state/schema.js";

/**
 * Schema history of the journal database (`<root home>/journal.db`), oldest first. Append new
 * steps; never edit a released one. Run by the same `migrate` as the state database.
 *
 * - `entries`: one row per inbound message (`key` = `<profile>:<platform>:<receiptId>`), with
 *   its turn's status message while it shows and the rollover messages of its streamed reply's
 *   preview (v5);
 * - `receipts`: every receipt id an entry was recorded by (all of a merged message's, the
 *   first being the entry's key), keyed the same way;
 * - `cursors`: the newest recorded Discord message per chat, for the catch-up after a restart;
 * - `replies` and `reply_steps`: the outbox, one row per finished turn's reply (with its media
 *   plan once planned, and `plain` for the gateway's own words: a command's answer, v6) and
 *   one per delivered step of it.
 */
export const JOURNAL_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    up(db) {
      db.exec(`
        CREATE TABLE entries (
          id          INTEGER PRIMARY KEY AUTOINCREMENT,
          key         TEXT NOT NULL UNIQUE,
          profile     TEXT NOT NULL,
          platform    TEXT NOT NULL,
          state       TEXT NOT NULL CHECK (state IN ('received', 'started', 'done')),
          outcome     TEXT,
          owner       TEXT NOT NULL,
          message     TEXT NOT NULL CHECK (json_valid(message)),
          received_at INTEGER NOT NULL,
          started_at  INTEGER,
          finished_at INTEGER
        ) STRICT;
        CREATE INDEX entries_open ON entries (owner, id) WHERE state <> 'done';
        CREATE INDEX entries_done ON entries (finished_at) WHERE state = 'done';

        CREATE TABLE cursors (
          profile         TEXT NOT NULL,
          channel_id      TEXT NOT NULL,
          last_message_id TEXT NOT NULL,
          updated_at      INTEGER NOT NULL,
          PRIMARY KEY (profile, channel_id)
        ) STRICT, WITHOUT ROWID;

        CREATE TABLE replies (
          id          TEXT PRIMARY KEY NOT NULL,
          entry_id    INTEGER,
          profile     TEXT NOT NULL,
          platform    TEXT NOT NULL,
          session_key TEXT NOT NULL,
          slot        TEXT NOT NULL,
          target      TEXT NOT NULL CHECK (json_valid(target)),
          text        TEXT NOT NULL,
          state       TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'given_up')),
          owner       TEXT NOT NULL,
          attempts    INTEGER NOT NULL DEFAULT 0,
          created_at  INTEGER NOT NULL,
          not_before  INTEGER NOT NULL DEFAULT 0,
          last_error  TEXT,
          closed_at   INTEGER
        ) STRICT;
        CREATE INDEX replies_pending ON replies (owner, created_at) WHERE state = 'pending';
        CREATE INDEX replies_closed ON replies (closed_at) WHERE state <> 'pending';

        CREATE TABLE reply_steps (
          reply_id    TEXT NOT NULL,
          key         TEXT NOT NULL,
          result      TEXT NOT NULL CHECK (result IN ('sending', 'sent', 'unconfirmed', 'failed')),
          recorded_at INTEGER NOT NULL,
          PRIMARY KEY (reply_id, key)
        ) STRICT;
      `);
    },
  },
  {
    // The media plan of a reply, recorded before its first send (docs/durability.md). Replies
    // recorded before this step have none: they are planned from their text as before.
    version: 2,
    up(db) {
      db.exec("ALTER TABLE replies ADD COLUMN plan TEXT CHECK (plan IS NULL OR json_valid(plan))");
    },
  },
  {
    // A message is recorded by each of its receipt ids (an album by all its updates), so an
    // album offered again with more items runs only the new ones (docs/durability.md). An
    // entry recorded before this step is known by its key alone, which stood for the whole
    // album then (`whole`): offered again under it, an album is taken as recorded, as before.
    version: 3,
    up(db) {
      db.exec(`
        CREATE TABLE receipts (
          key      TEXT PRIMARY KEY NOT NULL,
          entry_id INTEGER NOT NULL,
          whole    INTEGER NOT NULL DEFAULT 0 CHECK (whole IN (0, 1))
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX receipts_entry ON receipts (entry_id);
        INSERT INTO receipts (key, entry_id, whole) SELECT key, id, 1 FROM entries;
      `);
    },
  },
  {
    // The turn's live status message (its chat and id) while it shows, so the next start
    // clears one a crash left behind (docs/durability.md).
    version: 4,
    up(db) {
      db.exec(`
        ALTER TABLE entries ADD COLUMN status TEXT CHECK (status IS NULL OR json_valid(status));
        CREATE INDEX entries_status ON entries (owner) WHERE status IS NOT NULL;
      `);
    },
  },
  {
    // The rollover messages of a turn's streamed preview past the platform's length (the
    // first preview message is the status above), so the next start deletes those a crash
    // left behind (docs/durability.md).
    version: 5,
    up(db) {
      db.exec(
        "ALTER TABLE entries ADD COLUMN previews TEXT CHECK (previews IS NULL OR json_valid(previews))",
      );
    },
  },
  {
    // A command's answer (the gateway's own words) is recorded with its entry's close and
    // delivered by the outbox like a turn's reply, but as written: no `MEDIA:` tag read, not
    // formatted (docs/durability.md, "Command answers").
    version: 6,
    up(db) {
      db.exec(
        "ALTER TABLE replies ADD COLUMN plain INTEGER NOT NULL DEFAULT 0 CHECK (plain IN (0, 1))",
      );
    },
  },
];
