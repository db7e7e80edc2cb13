import { z } from "zod";
import { Defaults } from "../defaults.js";
import { timerSeconds } from "./durations.js";
import type { ApprovalRules, ApprovalSettings } from "./types.js";

const pattern = z.string().superRefine((source, ctx) => {
  try {
    new RegExp(source, "i");
  } catch (error) {
    ctx.addIssue({
      code: "custom",
      message: `a regular expression (${error instanceof Error ? error.message : String(error)})`,
    });
  }
});

const rulesSchema = z.strictObject({
  commands: z.array(pattern).optional(),
  writesOutsideWorkspace: z.boolean().optional(),
  network: z.boolean().optional(),
  filesOverBytes: z
    .number()
    .int()
    .positive({ error: "a positive whole number of bytes" })
    .optional(),
});

const askSchema = z.union([z.enum(["never", "always"]), rulesSchema], {
  error: '"never", "always" or rules { commands, writesOutsideWorkspace, network, filesOverBytes }',
});

/**
 * `agent.approvals` (docs/approvals.md): `never`, `always`, or
 * `{ ask: never | always | rules, approvers: sender | admins, expiresSeconds }`.
 */
export const approvalsSchema = z.union([
  z.enum(["never", "always"]),
  z.strictObject({
    ask: askSchema.optional(),
    approvers: z
      .enum(["sender", "admins"], {
        error: 'who may approve: "sender" (the person who asked, or an admin) or "admins"',
      })
      .optional(),
    expiresSeconds: timerSeconds(10, "a whole number of seconds, at least 10").optional(),
  }),
]);

/** The settings of `agent.approvals` as written, with the `Defaults.approvals` filled in. */
export function resolveApprovals(
  raw: z.infer<typeof approvalsSchema> | undefined,
): ApprovalSettings {
  const entry = typeof raw === "string" ? { ask: raw } : (raw ?? {});
  const ask: "never" | "always" | ApprovalRules = entry.ask ?? Defaults.approvals.ask;
  return {
    ask,
    approvers: entry.approvers ?? Defaults.approvals.approvers,
    expiresSeconds: entry.expiresSeconds ?? Defaults.approvals.expiresSeconds,
  };
}
