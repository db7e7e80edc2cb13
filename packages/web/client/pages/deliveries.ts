/** Deliveries: the last replies with their files, previewed, withheld or missing. */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import type { DeliveryView, FileView } from "../../src/types.js";
import { badge, bytes } from "../format.js";
import { useFetched, useLiveState } from "../hooks.js";

function TextHead({ src }: { src: string }) {
  const [text, setText] = useState<string | undefined>(undefined);
  useEffect(() => {
    void fetch(src).then(async (a) => setText(a.ok ? await a.text() : `(HTTP ${a.status})`));
  }, [src]);
  return html`<pre class="head" data-testid="text-head">${text ?? "…"}</pre>`;
}

function FilePreview({ reply, file }: { reply: string; file: FileView }) {
  if (file.status === "withheld") {
    return html`<li class="file withheld" data-testid="file" data-status="withheld">${badge("withheld", "bad")} ${file.reason}</li>`;
  }
  if (file.status === "missing") {
    return html`<li class="file missing" data-testid="file" data-status="missing">${badge("missing", "warn")} <code>${file.path}</code>
      <div class="muted">Tried: ${file.tried.length === 0 ? "no layout" : file.tried.map((p) => html`<code>${p}</code> `)}</div></li>`;
  }
  if (file.status === "too_large") {
    return html`<li class="file" data-testid="file" data-status="too_large">${badge("too large", "warn")} <code>${file.path}</code> ${bytes(file.size)} (limit ${bytes(file.limit)})</li>`;
  }
  const src = `/api/preview/${encodeURIComponent(reply)}/${file.index}`;
  let view: unknown = html`<a href=${src} download=${file.name}>download</a>`;
  if (file.mime.startsWith("image/"))
    view = html`<img src=${src} alt=${file.name} loading="lazy" data-testid="preview" />`;
  else if (file.mime.startsWith("audio/"))
    view = html`<audio controls preload="none" src=${src}></audio>`;
  else if (file.mime.startsWith("video/"))
    view = html`<video controls preload="none" src=${src}></video>`;
  else if (file.mime.startsWith("text/")) view = html`<${TextHead} src=${`${src}?head=1`} />`;
  return html`<li class="file" data-testid="file" data-status=${file.status}>
    ${badge(file.status, file.status === "delivered" ? "good" : "warn")} <b>${file.name}</b> <span class="muted">${file.kind}, ${bytes(file.size)}</span>
    <div class="preview">${view}</div></li>`;
}

export function Deliveries() {
  const live = useLiveState();
  const [replies, error, refresh] = useFetched<DeliveryView[]>(
    "/api/deliveries",
    live.changed.deliveries ?? 0,
  );
  return html`
    <section>
      <h2>Deliveries <button onClick=${refresh}>Refresh</button></h2>
      ${error && html`<p class="error">${error}</p>`}
      ${
        replies === undefined
          ? html`<p class="muted">Loading…</p>`
          : replies.length === 0
            ? html`<p class="muted">No replies yet.</p>`
            : html`<ul class="replies" data-testid="deliveries">
                ${replies.map(
                  (r) => html`<li class="reply" data-testid="reply" data-id=${r.id}>
                    <div class="reply-head">${badge(r.state, r.state === "delivered" ? "good" : r.state === "pending" ? "warn" : "bad")}
                      <time>${new Date(r.createdMs).toLocaleString()}</time> <span class="key">${r.sessionKey}</span>
                      ${r.attempts > 1 && html`<span class="muted">${r.attempts} attempts</span>`}</div>
                    ${r.lastError && html`<p class="error">${r.lastError}</p>`}
                    ${r.text && html`<pre class="reply-text">${r.text}</pre>`}
                    ${r.files.length > 0 && html`<ul class="files">${r.files.map((f) => html`<${FilePreview} reply=${r.id} file=${f} />`)}</ul>`}
                  </li>`,
                )}
              </ul>`
      }
    </section>`;
}
