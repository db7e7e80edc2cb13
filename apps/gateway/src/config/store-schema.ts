import { z } from "zod";
import { timerMs } from "./durations.js";
import type { StoreSettings } from "./types.js";

const positiveInt = z.number().int().positive();

/**
 * `store:` (docs/store.md): where the journal and the profiles' state live. `sqlite` (the
 * default) keeps today's files in the homes; `postgres` one database server for all of it.
 */
export const storeSchema = z.discriminatedUnion(
  "kind",
  [
    z.strictObject({ kind: z.literal("sqlite") }),
    z.strictObject({
      kind: z.literal("postgres"),
      url: z.string().refine((url) => /^postgres(ql)?:\/\/./i.test(url.trim()), {
        error:
          "a PostgreSQL URL: postgres://user:password@host:5432/database (usually url: ${DATABASE_URL})",
      }),
      maxConnections: positiveInt.optional(),
      statementTimeoutMs: timerMs().optional(),
      queryTimeoutMs: timerMs().optional(),
      connectTimeoutMs: timerMs().optional(),
      idleTimeoutMs: timerMs().optional(),
    }),
  ],
  { error: 'a store: { kind: sqlite } or { kind: postgres, url: "postgres://…" }' },
);

/** The validated `store:` with its default (`sqlite`) applied. */
export function resolveStore(file: z.infer<typeof storeSchema> | undefined): StoreSettings {
  if (file === undefined || file.kind === "sqlite") return { kind: "sqlite" };
  return { ...file, url: file.url.trim() };
}
