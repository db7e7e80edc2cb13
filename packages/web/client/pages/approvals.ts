/**
 * Approvals: the questions the agent asked before acting and how each ended (who asked, what
 * for, who decided and when), newest first (docs/web-console.md, "Approvals").
 */
import { html } from "htm/preact";
import type { ApprovalState, ApprovalsView } from "../../src/types.js";
import { ago, badge } from "../format.js";
import { useFetched, useLiveState, useNow } from "../hooks.js";

const Shown: Record<ApprovalState, readonly [string, string]> = {
  pending: ["waiting", "warn"],
  allowed: ["allowed once", "good"],
  allowed_session: ["allowed for the session", "good"],
  denied: ["denied", "bad"],
  expired: ["expired", "bad"],
  cancelled: ["turn ended first", ""],
  interrupted: ["gateway restarted", ""],
};

/** Who decided, in words: a person's name, or what ended it. */
function decider(by: string | undefined, name: string | undefined): string {
  if (by === "timer") return "nobody (expired)";
  if (by === "gateway") return "the gateway";
  if (by === undefined) return "";
  return name === undefined || name === by ? by : `${name} (${by})`;
}

export function Approvals() {
  const live = useLiveState();
  const now = useNow();
  // A question asked or decided changes its session's "doing": fetch again then.
  const [view, error, refresh] = useFetched<ApprovalsView>("/api/approvals", live.sessions);
  return html`
    <section>
      <h2>Approvals <button onClick=${refresh}>Refresh</button></h2>
      ${error && html`<p class="error">${error}</p>`}
      ${
        view === undefined
          ? html`<p class="muted">Loading…</p>`
          : view.approvals.length === 0
            ? html`<p class="muted">No approvals asked (agent.approvals is never, or nothing asked yet).</p>`
            : html`<table class="rows" data-testid="approvals">
                <thead><tr><th>Asked</th><th>Profile</th><th>Asked by</th><th>Action</th><th>Why</th><th>Outcome</th><th>Decided by</th><th>Decided</th></tr></thead>
                <tbody>
                  ${view.approvals.map((a) => {
                    const [label, tone] = Shown[a.status];
                    return html`<tr data-testid="approval" data-id=${a.id} data-status=${a.status}>
                      <td data-label="Asked"><time title=${new Date(a.createdMs).toISOString()}>${new Date(a.createdMs).toLocaleString()}</time></td>
                      <td data-label="Profile">${a.profile}</td>
                      <td data-label="Asked by" data-testid="requester">${a.requester} <div class="muted key">${a.sessionKey}</div></td>
                      <td data-label="Action"><code data-testid="action">${a.action}</code></td>
                      <td data-label="Why">${a.reason}</td>
                      <td data-label="Outcome" data-testid="outcome">${badge(label, tone)}${
                        a.status === "pending"
                          ? html` <span class="muted">expires ${a.expiresMs > now ? `in ${Math.ceil((a.expiresMs - now) / 60_000)} min` : "now"}</span>`
                          : ""
                      }</td>
                      <td data-label="Decided by" data-testid="decider">${decider(a.decidedBy, a.decidedByName)}</td>
                      <td data-label="Decided">${a.decidedMs === undefined ? "" : html`<time title=${new Date(a.decidedMs).toISOString()}>${ago(a.decidedMs, now)}</time>`}</td>
                    </tr>`;
                  })}
                </tbody>
              </table>`
      }
    </section>`;
}
