/** Sessions: who talks to the agent, what their turn runs now; Stop and Reset. */
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { post } from "../api.js";
import { ago, badge, elapsed } from "../format.js";
import { useLiveState, useNow } from "../hooks.js";

export function Sessions() {
  const live = useLiveState();
  const now = useNow();
  const [notice, setNotice] = useState<{ text: string; confirmKey?: string } | undefined>();
  const sessions = live.sessions;
  const stop = async (key: string) => {
    const answer = await post<{ text: string }>("/api/sessions/stop", { sessionKey: key }).catch(
      (e: unknown) => ({ text: `Failed: ${String(e)}` }),
    );
    setNotice({ text: answer.text });
  };
  const reset = async (key: string, confirm: boolean) => {
    const answer = await post<{ status: string; text: string }>("/api/slots/reset", {
      sessionKey: key,
      confirm,
    }).catch((e: unknown) => ({ status: "failed", text: `Failed: ${String(e)}` }));
    setNotice(
      answer.status === "needs_confirm"
        ? { text: answer.text, confirmKey: key }
        : { text: answer.text },
    );
  };
  return html`
    <section>
      <h2>Sessions</h2>
      ${
        notice &&
        html`<div class="notice" data-testid="notice" role="status"><p>${notice.text}</p>
          ${notice.confirmKey && html`<button class="danger" data-testid="confirm-reset" onClick=${() => reset(notice.confirmKey!, true)}>Reset it for all of them</button>`}
          <button onClick=${() => setNotice(undefined)}>Dismiss</button></div>`
      }
      ${
        sessions === undefined
          ? html`<p class="muted">Loading…</p>`
          : sessions.length === 0
            ? html`<p class="muted" data-testid="no-sessions">No session has sent a message since the gateway started.</p>`
            : html`<table class="rows" data-testid="sessions">
                <thead><tr><th>Session</th><th>Platform</th><th>Chat</th><th>User</th><th>Last activity</th><th>State</th><th>Doing</th><th></th></tr></thead>
                <tbody>
                  ${sessions.map(
                    (
                      s,
                    ) => html`<tr data-testid="session" data-key=${s.sessionKey} data-state=${s.state}>
                      <td data-label="Session" class="key">${s.sessionKey}</td>
                      <td data-label="Platform">${s.platform}</td>
                      <td data-label="Chat">${s.chat}</td>
                      <td data-label="User">${s.user}</td>
                      <td data-label="Last activity">${ago(s.lastActivityMs, now)}</td>
                      <td data-label="State">${badge(
                        s.state === "running"
                          ? `running ${elapsed(now - (s.turnStartedMs ?? now))}`
                          : s.state === "queued"
                            ? `${s.queued} queued`
                            : "idle",
                        s.state === "running" ? "warn" : "",
                      )}</td>
                      <td data-label="Doing" class="doing" data-testid="doing">${s.doing ?? ""}</td>
                      <td class="actions">
                        <button class="danger" data-testid="stop" disabled=${s.state === "idle"} onClick=${() => stop(s.sessionKey)}>Stop</button>
                        <button data-testid="reset" onClick=${() => reset(s.sessionKey, false)}>Reset</button>
                      </td>
                    </tr>`,
                  )}
                </tbody>
              </table>`
      }
    </section>`;
}
