/** Containers: this install's containers per profile and slot, orphans marked; Reap orphans. */
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import type { ContainerView } from "../../src/types.js";
import { post } from "../api.js";
import { badge, bytes, elapsed } from "../format.js";
import { useFetched, useLiveState } from "../hooks.js";

export function Containers() {
  const live = useLiveState();
  const [containers, error, refresh] = useFetched<ContainerView[]>(
    "/api/containers",
    // Asked again when a turn ended (not at every command: each look lists, tops and sizes
    // every container), or by the Refresh button.
    `${live.changed.containers ?? 0}/${live.changed.deliveries ?? 0}`,
  );
  const [notice, setNotice] = useState("");
  const reap = async () => {
    const answer = await post<{ text: string }>("/api/orphans/reap").catch((e: unknown) => ({
      text: `Failed: ${String(e)}`,
    }));
    setNotice(answer.text);
    refresh();
  };
  return html`
    <section>
      <h2>Containers <button class="danger" data-testid="reap" onClick=${reap}>Reap orphans</button> <button onClick=${refresh}>Refresh</button></h2>
      ${notice && html`<div class="notice" role="status"><pre>${notice}</pre></div>`}
      ${error && html`<p class="error">${error}</p>`}
      ${
        containers === undefined
          ? html`<p class="muted">Loading…</p>`
          : containers.length === 0
            ? html`<p class="muted">No containers.</p>`
            : html`<table class="rows" data-testid="containers">
                <thead><tr><th>Container</th><th>Profile</th><th>Slot</th><th>State</th><th>Age</th><th>Disk</th><th>Processes</th></tr></thead>
                <tbody>
                  ${containers.map(
                    (
                      c,
                    ) => html`<tr data-testid="container" data-slot=${c.slot} class=${c.orphan ? "orphan" : ""}>
                      <td data-label="Container"><code>${c.id.slice(0, 12)}</code> ${c.orphan && badge("orphan", "bad")}
                        ${c.orphanReason && html`<div class="muted">${c.orphanReason}</div>`}</td>
                      <td data-label="Profile">${c.profile}</td>
                      <td data-label="Slot" class="key">${c.slot}</td>
                      <td data-label="State">${badge(c.state, c.state === "running" ? "good" : "")}</td>
                      <td data-label="Age">${elapsed(Date.now() - c.createdMs)}</td>
                      <td data-label="Disk">${bytes(c.diskBytes)}</td>
                      <td data-label="Processes">${c.processes ?? "—"}</td>
                    </tr>`,
                  )}
                </tbody>
              </table>`
      }
    </section>`;
}
