/** Overview: channels, engine, queue, journal and the last warnings (docs/web-console.md). */
import { html } from "htm/preact";
import { ago, badge } from "../format.js";
import { useLiveState } from "../hooks.js";

export function Overview() {
  const live = useLiveState();
  const o = live.overview;
  if (o === undefined) return html`<p class="muted">Loading…</p>`;
  return html`
    <section>
      <h2>Overview ${badge(o.status, o.status === "ok" ? "good" : o.status === "failed" ? "bad" : "warn")}</h2>
      <div class="cards">
        <div class="card"><h3>Engine</h3><p data-testid="engine">${o.engine.reachable ? badge("reachable", "good") : badge("unreachable", "bad")}</p>
          ${o.engine.detail && html`<p class="muted">${o.engine.detail}</p>`}</div>
        <div class="card"><h3>Queue</h3><p><b data-testid="running">${o.queue.running}</b> running, <b>${o.queue.queued}</b> queued</p>
          <p class="muted">${o.outbox.scheduled} repl${o.outbox.scheduled === 1 ? "y" : "ies"} waiting to retry</p></div>
        <div class="card"><h3>Turns</h3><p><b data-testid="turns-per-minute">${o.turnsPerMinute}</b> in the last minute</p></div>
        <div class="card"><h3>Journal</h3><p>${o.journal.writable ? badge("writable", "good") : badge("failing", "bad")}</p>
          ${o.journal.detail && html`<p class="muted">${o.journal.detail}</p>`}</div>
        ${
          o.store &&
          html`<div class="card"><h3>Database</h3><p data-testid="store">${o.store.reachable ? badge("reachable", "good") : badge("unreachable", "bad")}</p>
          <p class="muted">PostgreSQL ${o.store.where}${o.store.roundTripMs === undefined ? "" : `, round trip ${o.store.roundTripMs} ms`}</p>
          ${!o.store.reachable && html`<p class="muted">down since ${ago(o.store.downSinceMs)}: ${o.store.detail ?? "no answer"}; new messages wait until it is back</p>`}</div>`
        }
      </div>
      <h3>Channels</h3>
      <table class="rows" data-testid="channels">
        <thead><tr><th>Platform</th><th>Profile</th><th>State</th><th>Last answer</th><th>Detail</th></tr></thead>
        <tbody>
          ${o.channels.map(
            (
              c,
            ) => html`<tr data-testid="channel" data-profile=${c.profile} data-alive=${String(c.alive)}>
              <td data-label="Platform">${c.platform}</td>
              <td data-label="Profile">${c.profile}</td>
              <td data-label="State">${c.alive ? badge("up", "good") : badge(`down (${c.state})`, "bad")}</td>
              <td data-label="Last answer">${ago(c.lastOkMs)}</td>
              <td data-label="Detail" class="detail">${c.detail ?? ""}</td>
            </tr>`,
          )}
        </tbody>
      </table>
      ${
        o.cluster &&
        html`<h3>Replicas of cluster ${o.cluster.id}</h3>
        ${
          o.cluster.replicas === undefined
            ? html`<p class="muted">Unknown: ${o.cluster.detail ?? "the database did not answer"}</p>`
            : html`<table class="rows" data-testid="replicas">
            <thead><tr><th>Replica</th><th>Host</th><th>Version</th><th>Sessions</th><th>Last heartbeat</th><th>State</th></tr></thead>
            <tbody>
              ${o.cluster.replicas.map(
                (
                  r,
                ) => html`<tr data-testid="replica" data-replica=${r.id} data-alive=${String(r.alive)}>
                  <td data-label="Replica">${r.id}${r.id === o.cluster?.replica ? " (this one)" : ""}</td>
                  <td data-label="Host">${r.host}</td>
                  <td data-label="Version">${r.version}</td>
                  <td data-label="Sessions">${r.sessionsHeld}</td>
                  <td data-label="Last heartbeat">${Math.round(r.heartbeatAgeMs / 1000)} s ago</td>
                  <td data-label="State">${r.alive ? badge(r.state === "stopping" ? "stopping" : "alive", "good") : badge(r.state === "stopped" ? "stopped" : "dead", "bad")}</td>
                </tr>`,
              )}
            </tbody>
          </table>`
        }`
      }
      <h3>Recent errors</h3>
      ${
        o.recentErrors.length === 0
          ? html`<p class="muted">None.</p>`
          : html`<ul class="log" data-testid="recent-errors">
              ${o.recentErrors.map(
                (
                  e,
                ) => html`<li class="lvl-${e.level}"><time>${new Date(e.timeMs).toLocaleTimeString()}</time> <b>${e.level}</b> ${e.msg}
                  ${e.sessionKey && html` <span class="muted">${e.sessionKey}</span>`}</li>`,
              )}
            </ul>`
      }
    </section>`;
}
