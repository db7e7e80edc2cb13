/** Tasks: every scheduled task of every profile, its next and last run; Run now, Pause, Resume. */
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import type { TaskActionName, TaskView } from "../../src/types.js";
import { post } from "../api.js";
import { ago, badge } from "../format.js";
import { useFetched, useLiveState } from "../hooks.js";

const outcomeTone = (outcome: string) =>
  outcome === "done" ? "good" : outcome === "running" ? "" : "bad";

export function Tasks() {
  const live = useLiveState();
  const [tasks, error, refresh] = useFetched<TaskView[]>(
    "/api/tasks",
    // A run ends with a delivery (or a log line): asked again then, or by Refresh.
    live.changed.deliveries ?? 0,
  );
  const [notice, setNotice] = useState("");
  const act = async (task: TaskView, action: TaskActionName) => {
    const answer = await post<{ text: string }>("/api/tasks/action", {
      profile: task.profile,
      id: task.id,
      action,
    }).catch((e: unknown) => ({ text: `Failed: ${String(e)}` }));
    setNotice(answer.text);
    refresh();
  };
  return html`
    <section>
      <h2>Tasks <button onClick=${refresh}>Refresh</button></h2>
      ${notice && html`<div class="notice" role="status"><pre>${notice}</pre></div>`}
      ${error && html`<p class="error">${error}</p>`}
      ${
        tasks === undefined
          ? html`<p class="muted">Loading…</p>`
          : tasks.length === 0
            ? html`<p class="muted">No scheduled tasks. Users make them with /every, /at and /cron; operators in the config's schedules.</p>`
            : html`<table class="rows" data-testid="tasks">
                <thead><tr><th>Task</th><th>Profile</th><th>Owner</th><th>Timing</th><th>Next run</th><th>Last run</th><th></th></tr></thead>
                <tbody>
                  ${tasks.map(
                    (t) => html`<tr data-testid="task" data-task=${t.id}>
                      <td data-label="Task"><code>${t.id}</code> ${badge(t.state, t.state === "active" ? "good" : "")}
                        ${t.pausedReason === undefined ? "" : html`<div data-testid="paused-reason">paused: ${t.pausedReason}</div>`}
                        <div class="muted">${t.text}</div><div class="muted">in ${t.chat}</div></td>
                      <td data-label="Profile">${t.profile}</td>
                      <td data-label="Owner">${t.ownerName ?? t.owner}</td>
                      <td data-label="Timing">${t.timing}</td>
                      <td data-label="Next run">${t.nextMs === undefined ? "—" : new Date(t.nextMs).toLocaleString()}</td>
                      <td data-label="Last run">${
                        t.lastRun === undefined
                          ? "never"
                          : html`${badge(t.lastRun.outcome, outcomeTone(t.lastRun.outcome))} ${ago(t.lastRun.atMs)}`
                      }</td>
                      <td>
                        <button data-testid="run" onClick=${() => act(t, "run")}>Run now</button>
                        ${
                          t.state === "paused"
                            ? html`<button data-testid="resume" onClick=${() => act(t, "resume")}>Resume</button>`
                            : t.state === "active"
                              ? html`<button data-testid="pause" onClick=${() => act(t, "pause")}>Pause</button>`
                              : ""
                        }
                      </td>
                    </tr>`,
                  )}
                </tbody>
              </table>`
      }
    </section>`;
}
