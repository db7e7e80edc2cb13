/** Logs: the kept log lines, filtered by level and by part of a session key. */
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import type { LogView } from "../../src/types.js";
import { useFetched, useLiveState } from "../hooks.js";

const Levels = ["trace", "debug", "info", "warn", "error", "fatal"];

export function Logs() {
  const live = useLiveState();
  const [level, setLevel] = useState("info");
  const [session, setSession] = useState("");
  const query = `/api/logs?level=${level}&session=${encodeURIComponent(session)}`;
  const [lines, error] = useFetched<LogView[]>(query, live.changed.logs ?? 0);
  return html`
    <section>
      <h2>Logs</h2>
      <div class="filters">
        <label>Level <select data-testid="level" value=${level} onChange=${(e: Event) => setLevel((e.target as HTMLSelectElement).value)}>
          ${Levels.map((l) => html`<option value=${l}>${l} and worse</option>`)}
        </select></label>
        <label>Session <input data-testid="session-filter" value=${session} placeholder="part of a session key"
          onInput=${(e: Event) => setSession((e.target as HTMLInputElement).value)} /></label>
      </div>
      ${error && html`<p class="error">${error}</p>`}
      ${
        lines === undefined
          ? html`<p class="muted">Loading…</p>`
          : html`<ul class="log" data-testid="logs">
              ${[...lines].reverse().map(
                (
                  l,
                ) => html`<li class="lvl-${l.level}" data-testid="log-line"><time>${new Date(l.timeMs).toLocaleTimeString()}</time> <b>${l.level}</b> ${l.msg}
                  ${l.sessionKey && html` <span class="key">${l.sessionKey}</span>`}
                  <div class="fields">${l.fields}</div></li>`,
              )}
            </ul>`
      }
    </section>`;
}
