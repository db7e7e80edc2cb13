import { describe, expect, it } from "vitest";
import { StorageError } from "../durable/errors.js";
import { PostgresStoreError } from "../postgres/errors.js";
import { reportStepFailure, StoreDownText } from "./boundary.js";
import { DeliveryFailedText } from "./enqueue-turn.js";
import { PipelineStepError } from "./step-error.js";
import type { MessageContext } from "./types.js";

/** The parts of a context the boundary touches: the chat, the journal and the log. */
function context() {
  const said: string[] = [];
  const finished: [number[], string][] = [];
  const logged: string[] = [];
  const kept: number[] = [];
  const ctx = {
    entryId: 7,
    target: { chatId: "1" },
    channel: { sendText: async (_target: unknown, text: string) => void said.push(text) },
    services: {
      outbox: { signal: new AbortController().signal },
      keep: (turn: { entryId: number }) => void kept.push(turn.entryId),
      journal: {
        finished: async (ids: number[], outcome: string) => void finished.push([ids, outcome]),
      },
    },
    log: {
      error: (_fields: unknown, line: string) => void logged.push(line),
      warn: () => {},
    },
  } as unknown as MessageContext;
  return { ctx, said, finished, logged, kept };
}

/** What the PostgreSQL journal throws when the server went away mid-call. */
const journalUnreachable = () =>
  new StorageError({
    operation: "addReply",
    path: "PostgreSQL 127.0.0.1:5432/mg",
    reason: "the server is not reachable",
    cause: new PostgresStoreError(
      "addReply",
      "127.0.0.1:5432/mg",
      Object.assign(new Error("the database system is shutting down"), { code: "57P03" }),
    ),
  });

describe("reportStepFailure", () => {
  it("keeps the entry of a turn whose journal write met an unreachable PostgreSQL", async () => {
    const { ctx, said, finished, logged, kept } = context();
    await reportStepFailure(
      ctx,
      new PipelineStepError("sendReply", journalUnreachable()),
      DeliveryFailedText,
    );
    expect(said).toEqual([StoreDownText]);
    expect(finished).toEqual([]);
    // Handed to the gateway, which runs it again once the database answers.
    expect(kept).toEqual([7]);
    expect(logged[0]).toContain("the database is not reachable; the message stays in the journal");
  });

  it("closes the entry as failed for a journal failure that is not an outage", async () => {
    const { ctx, said, finished, kept } = context();
    const failure = new StorageError({
      operation: "addReply",
      path: "/home/journal.db",
      reason: "disk I/O error",
      systemCode: "SQLITE_IOERR",
    });
    await reportStepFailure(ctx, new PipelineStepError("sendReply", failure), DeliveryFailedText);
    expect(said).toEqual([DeliveryFailedText]);
    expect(finished).toEqual([[[7], "failed"]]);
    expect(kept).toEqual([]);
  });
});
