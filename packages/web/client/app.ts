/**
 * The web console's front end: preact + htm, one page per path (preact-iso's router), data
 * from the console's JSON API, live updates from its event stream (docs/web-console.md).
 */
import { html } from "htm/preact";
import { createContext, render } from "preact";
import { useCallback, useContext, useEffect, useState } from "preact/hooks";
import { LocationProvider, Route, Router, useLocation } from "preact-iso";
import type {
  ContainerView,
  DeliveryView,
  FileView,
  LogView,
  OverviewView,
  SessionView,
} from "../src/types.js";

// ---------------------------------------------------------------- API

let csrfToken = "";

async function csrf(): Promise<string> {
  if (csrfToken === "") {
    const answer = await fetch("/api/csrf");
    csrfToken = ((await answer.json()) as { token: string }).token;
  }
  return csrfToken;
}

/** Set once the page leaves for the login page: one navigation, whatever noticed first. */
let leaving = false;

function toLogin(): never {
  if (!leaving) {
    leaving = true;
    location.assign("/login");
  }
  throw new Error("logged out");
}

async function get<T>(path: string): Promise<T> {
  const answer = await fetch(path);
  if (answer.status === 401) toLogin();
  if (!answer.ok) throw new Error(`${path}: HTTP ${answer.status}`);
  return (await answer.json()) as T;
}

async function post<T>(path: string, body: unknown = {}): Promise<T> {
  const answer = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-csrf-token": await csrf() },
    body: JSON.stringify(body),
  });
  if (answer.status === 401) toLogin();
  const data = answer.status === 204 ? {} : ((await answer.json()) as T & { error?: string });
  if (!answer.ok) throw new Error((data as { error?: string }).error ?? `HTTP ${answer.status}`);
  return data as T;
}

// ---------------------------------------------------------------- live state

interface Live {
  sessions: SessionView[] | undefined;
  overview: OverviewView | undefined;
  /** Per kind, how many "changed" notices came (pages fetch again when theirs moves). */
  changed: Record<string, number>;
  connected: boolean;
}

const LiveContext = createContext<Live>({
  sessions: undefined,
  overview: undefined,
  changed: {},
  connected: false,
});

/** The live state the shell keeps (one event stream for every page). */
const useLiveState = () => useContext(LiveContext);

function useLive(): Live {
  const [live, setLive] = useState<Live>({
    sessions: undefined,
    overview: undefined,
    changed: {},
    connected: false,
  });
  useEffect(() => {
    const events = new EventSource("/api/events");
    events.addEventListener("open", () => setLive((l) => ({ ...l, connected: true })));
    events.addEventListener("error", () => {
      if (leaving) return;
      setLive((l) => ({ ...l, connected: false }));
      // A stream refused for want of a session: back to the login page.
      void fetch("/api/overview").then((a) => a.status === 401 && toLogin());
    });
    events.addEventListener("sessions", (e) => {
      const sessions = JSON.parse((e as MessageEvent<string>).data) as SessionView[];
      setLive((l) => ({ ...l, sessions }));
    });
    events.addEventListener("overview", (e) => {
      const overview = JSON.parse((e as MessageEvent<string>).data) as OverviewView;
      setLive((l) => ({ ...l, overview }));
    });
    events.addEventListener("changed", (e) => {
      const kinds = JSON.parse((e as MessageEvent<string>).data) as string[];
      setLive((l) => {
        const changed = { ...l.changed };
        for (const kind of kinds) changed[kind] = (changed[kind] ?? 0) + 1;
        return { ...l, changed };
      });
    });
    return () => events.close();
  }, []);
  return live;
}

/** Data fetched from `path`, again whenever `version` moves. */
function useFetched<T>(path: string, version: unknown): [T | undefined, string, () => void] {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState("");
  const [bump, setBump] = useState(0);
  useEffect(() => {
    let current = true;
    get<T>(path).then(
      (d) => {
        if (!current) return;
        setData(d);
        setError("");
      },
      (e: unknown) => {
        if (current) setError(e instanceof Error ? e.message : String(e));
      },
    );
    return () => {
      current = false;
    };
  }, [path, version, bump]);
  return [data, error, () => setBump((b) => b + 1)];
}

/** Now, moving every second (elapsed times). */
function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return now;
}

// ---------------------------------------------------------------- formatting

function ago(ms: number | undefined, now = Date.now()): string {
  if (ms === undefined) return "never";
  return `${elapsed(now - ms)} ago`;
}

function elapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

function bytes(n: number | undefined): string {
  if (n === undefined) return "—";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

const badge = (text: string, tone: string) =>
  html`<span class="badge ${tone}" data-testid="badge">${text}</span>`;

// ---------------------------------------------------------------- pages

function Overview() {
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

function Sessions() {
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

function Containers() {
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

function Deliveries() {
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

const Levels = ["trace", "debug", "info", "warn", "error", "fatal"];

function Logs() {
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

// ---------------------------------------------------------------- shell

const Nav = [
  ["/", "Overview"],
  ["/sessions", "Sessions"],
  ["/containers", "Containers"],
  ["/deliveries", "Deliveries"],
  ["/logs", "Logs"],
] as const;

const NotFound = () => html`<p>Not found.</p>`;

function Shell() {
  const live = useLive();
  const { path } = useLocation();
  const logout = useCallback(async () => {
    const request = post("/logout");
    leaving = true;
    await request.catch(() => undefined);
    location.assign("/login");
  }, []);
  return html`
    <header>
      <h1>mediagate</h1>
      <nav>${Nav.map(([href, name]) => html`<a href=${href} class=${path === href ? "active" : ""}>${name}</a>`)}</nav>
      <span class=${`live ${live.connected ? "on" : ""}`} title="live updates">${live.connected ? "● live" : "○ offline"}</span>
      <button data-testid="logout" onClick=${logout}>Log out</button>
    </header>
    <main>
      <${LiveContext.Provider} value=${live}>
      <${Router}>
        <${Route} path="/" component=${Overview} />
        <${Route} path="/sessions" component=${Sessions} />
        <${Route} path="/containers" component=${Containers} />
        <${Route} path="/deliveries" component=${Deliveries} />
        <${Route} path="/logs" component=${Logs} />
        <${Route} default component=${NotFound} />
      <//>
      <//>
    </main>`;
}

render(html`<${LocationProvider}><${Shell} /><//>`, document.getElementById("app")!);
