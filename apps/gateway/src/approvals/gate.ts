import type { ToolRunner } from "../agents/types.js";
import type { ApprovalSettings } from "../config/types.js";
import type { ApprovalBroker, ApprovalRequest } from "./broker.js";
import { type AgentAction, approvalReason, describeAction } from "./rules.js";

/** What {@link approvalGate} needs besides the tools. */
export interface ApprovalGateOptions {
  readonly broker: ApprovalBroker;
  readonly settings: ApprovalSettings;
  /** The request's fixed parts; the gate fills in the action and the reason. */
  readonly request: Omit<ApprovalRequest, "action" | "reason" | "settings">;
  /** Told what the turn waits for (the status message, the web console), `undefined` after. */
  readonly doing?: ((activity: string | undefined) => void) | undefined;
}

/**
 * `tools` with `run` and `writeFile` asking an approver first when the profile's
 * `agent.approvals` say so (docs/approvals.md); `readFile` never asks. Nothing runs before
 * the answer is yes; a no rejects with the broker's {@link ToolRefusedError}. Once an approver
 * allowed the session (or had before, until /reset), nothing asks again.
 */
export function approvalGate(tools: ToolRunner, options: ApprovalGateOptions): ToolRunner {
  const { settings } = options;
  if (settings.ask === "never") return tools;
  let sessionAllowed: boolean | undefined;
  const check = async (action: AgentAction): Promise<void> => {
    const reason = approvalReason(action, settings);
    if (reason === undefined) return;
    sessionAllowed ??= await options.broker.sessionAllowed(
      options.request.profile,
      options.request.sessionId,
    );
    if (sessionAllowed) return;
    options.doing?.(`waiting for approval: ${describeAction(action, 80)}`);
    try {
      const answer = await options.broker.ask({ ...options.request, settings, action, reason });
      if (answer === "session") sessionAllowed = true;
    } finally {
      options.doing?.(undefined);
    }
  };
  return {
    run: async (command, runOptions) => {
      await check({ kind: "command", command });
      return tools.run(command, runOptions);
    },
    readFile: (path, maxBytes) => tools.readFile(path, maxBytes),
    writeFile: async (path, content) => {
      await check({ kind: "write", path, bytes: Buffer.byteLength(content) });
      return tools.writeFile(path, content);
    },
  };
}
