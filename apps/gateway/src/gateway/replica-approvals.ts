import type { ApprovalBrokerOptions } from "../approvals/broker.js";
import { Defaults } from "../defaults.js";
import type { SessionLeases } from "../durable/session-leases.js";

/**
 * What the approval broker of a replica needs (docs/approvals.md, "Replicas"): it waits under
 * its instance id, the holder id of its session leases, so a press or a typed answer that
 * reaches another replica (the one holding the bot's connection) finds the question's waiter
 * alive when that waiter still holds the question's session, and records the answer for it
 * instead of closing the question as `interrupted`; the waiter reads its record every
 * `pollMs`, as the replicas' loop looks for messages handed to it.
 */
export function replicaApprovals(
  leases: SessionLeases,
): Pick<ApprovalBrokerOptions, "waiter" | "waitsElsewhere" | "watchMs"> {
  return {
    waiter: leases.owner,
    waitsElsewhere: async (profile, record) =>
      record.waiter !== leases.owner &&
      (await leases.holder({ profile, sessionKey: record.sessionKey })) === record.waiter,
    watchMs: Defaults.sessionLeases.pollMs,
  };
}
