import type { PostgresMigration } from "../postgres/migrate.js";

/** The component name of the state tables in `mediagate_schema` (docs/store.md). */
export const StateComponent = "state";

/**
 * Schema history of the state tables on PostgreSQL, oldest first; append new steps, never edit
 * a released one. Every profile of an install shares the tables: `profile` leads every key.
 * The versions are the SQLite schema's (schema.ts), so one number names one set of tables on
 * both backends; SQLite's step 2 (renaming session keys of an old format) has no counterpart,
 * since no PostgreSQL database ever held that format. Times are milliseconds (`bigint`), as in
 * SQLite; message and approval bodies are JSON text (checked on every write and read), so a
 * `\u0000` a model wrote stays escaped, which `jsonb` would refuse.
 */
export const PostgresStateMigrations: readonly PostgresMigration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE state_sessions (
        profile     text NOT NULL,
        session_key text NOT NULL,
        session_id  text NOT NULL,
        created_at  bigint NOT NULL,
        updated_at  bigint NOT NULL,
        PRIMARY KEY (profile, session_key),
        UNIQUE (profile, session_id)
      );
      CREATE TABLE state_messages (
        id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        profile    text NOT NULL,
        session_id text NOT NULL,
        role       text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        body       text NOT NULL,
        created_at bigint NOT NULL
      );
      CREATE INDEX state_messages_by_session ON state_messages (profile, session_id, id);
    `,
  },
  {
    version: 3,
    sql: `
      CREATE TABLE state_pairing_codes (
        profile    text NOT NULL,
        code       text NOT NULL,
        user_id    text NOT NULL,
        user_name  text,
        chat_id    text NOT NULL,
        created_at bigint NOT NULL,
        expires_at bigint NOT NULL,
        PRIMARY KEY (profile, code),
        UNIQUE (profile, user_id)
      );
      CREATE TABLE state_paired_users (
        profile     text NOT NULL,
        user_id     text NOT NULL,
        user_name   text,
        chat_id     text NOT NULL,
        approved_at bigint NOT NULL,
        approved_by text NOT NULL,
        PRIMARY KEY (profile, user_id)
      );
      CREATE TABLE state_pairing_guard (
        profile         text PRIMARY KEY,
        failed_attempts integer NOT NULL CHECK (failed_attempts >= 0),
        locked_until    bigint NOT NULL
      );
    `,
  },
  {
    version: 4,
    sql: `
      CREATE TABLE state_approvals (
        profile         text NOT NULL,
        id              text NOT NULL,
        seq             bigint GENERATED ALWAYS AS IDENTITY,
        session_id      text NOT NULL,
        chat            text NOT NULL,
        status          text NOT NULL,
        body            text NOT NULL,
        message_id      text,
        created_at      bigint NOT NULL,
        expires_at      bigint NOT NULL,
        decided_by      text,
        decided_by_name text,
        decided_at      bigint,
        PRIMARY KEY (profile, id)
      );
      CREATE INDEX state_approvals_by_status ON state_approvals (profile, status, chat, created_at);
      CREATE INDEX state_approvals_by_session ON state_approvals (profile, session_id, status);
    `,
  },
  {
    version: 5,
    sql: `
      CREATE TABLE state_summaries (
        profile    text NOT NULL,
        session_id text NOT NULL,
        content    text NOT NULL,
        through_id bigint NOT NULL CHECK (through_id > 0),
        created_at bigint NOT NULL,
        PRIMARY KEY (profile, session_id)
      );
    `,
  },
  {
    version: 6,
    sql: `
      CREATE TABLE state_usage (
        id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        profile       text NOT NULL,
        at            bigint NOT NULL,
        day           text NOT NULL,
        session_key   text NOT NULL,
        session_id    text NOT NULL,
        user_id       text,
        model         text NOT NULL,
        input_tokens  bigint NOT NULL CHECK (input_tokens >= 0),
        output_tokens bigint NOT NULL CHECK (output_tokens >= 0),
        cached_tokens bigint NOT NULL CHECK (cached_tokens >= 0),
        cost          double precision NOT NULL CHECK (cost >= 0)
      );
      CREATE INDEX state_usage_by_day ON state_usage (profile, day);
      CREATE INDEX state_usage_by_session ON state_usage (profile, session_key, day);
      CREATE INDEX state_usage_by_user ON state_usage (profile, user_id, day);
      CREATE TABLE state_session_models (
        profile     text NOT NULL,
        session_key text NOT NULL,
        model       text NOT NULL,
        updated_at  bigint NOT NULL,
        PRIMARY KEY (profile, session_key)
      );
    `,
  },
  {
    version: 7,
    sql: `
      CREATE TABLE state_tasks (
        profile           text NOT NULL,
        id                text NOT NULL,
        owner             text NOT NULL,
        owner_name        text,
        name              text,
        timing            text NOT NULL,
        timezone          text NOT NULL,
        text              text NOT NULL,
        chat              text NOT NULL,
        catch_up          text NOT NULL CHECK (catch_up IN ('once', 'skip')),
        paused            boolean NOT NULL DEFAULT false,
        active            boolean NOT NULL DEFAULT true,
        next_due_at       bigint NOT NULL,
        overlaps_in_a_row integer NOT NULL DEFAULT 0,
        created_at        bigint NOT NULL,
        PRIMARY KEY (profile, id)
      );
      CREATE INDEX state_tasks_by_due ON state_tasks (profile, active, paused, next_due_at);
      CREATE INDEX state_tasks_by_owner ON state_tasks (profile, owner, created_at);
      CREATE UNIQUE INDEX state_tasks_operator_names ON state_tasks (profile, name)
        WHERE owner = 'operator';
      CREATE TABLE state_task_runs (
        profile text NOT NULL,
        task_id text NOT NULL,
        due_at  bigint NOT NULL,
        outcome text NOT NULL,
        at      bigint NOT NULL,
        detail  text,
        PRIMARY KEY (profile, task_id, due_at)
      );
    `,
  },
  {
    version: 8,
    sql: `
      CREATE TABLE state_user_timezones (
        profile    text NOT NULL,
        user_id    text NOT NULL,
        timezone   text NOT NULL,
        updated_at bigint NOT NULL,
        PRIMARY KEY (profile, user_id)
      );
    `,
  },
  {
    version: 9,
    sql: `
      ALTER TABLE state_tasks
        ADD COLUMN unreachable_in_a_row integer NOT NULL DEFAULT 0,
        ADD COLUMN paused_reason text;
    `,
  },
  {
    version: 10,
    sql: `
      ALTER TABLE state_pairing_guard ADD COLUMN updated_at bigint NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 11,
    sql: `
      ALTER TABLE state_paired_users ADD COLUMN code text;
      CREATE INDEX state_paired_users_by_code ON state_paired_users (profile, code);
    `,
  },
];
