/**
 * The web console's front end: preact + htm, one page per path (preact-iso's router), data
 * from the console's JSON API, live updates from its event stream (docs/web-console.md).
 * This is the shell (header, navigation, the one event stream); each page is in `pages/`.
 */
import { html } from "htm/preact";
import { render } from "preact";
import { LocationProvider, Route, Router, useLocation } from "preact-iso";
import { logOut } from "./api.js";
import { LiveContext, useLive } from "./hooks.js";
import { Approvals } from "./pages/approvals.js";
import { Containers } from "./pages/containers.js";
import { Deliveries } from "./pages/deliveries.js";
import { Logs } from "./pages/logs.js";
import { Overview } from "./pages/overview.js";
import { Sessions } from "./pages/sessions.js";
import { Tasks } from "./pages/tasks.js";
import { Usage } from "./pages/usage.js";

const Nav = [
  ["/", "Overview"],
  ["/sessions", "Sessions"],
  ["/containers", "Containers"],
  ["/deliveries", "Deliveries"],
  ["/logs", "Logs"],
  ["/usage", "Usage"],
  ["/approvals", "Approvals"],
  ["/tasks", "Tasks"],
] as const;

const NotFound = () => html`<p>Not found.</p>`;

function Shell() {
  const live = useLive();
  const { path } = useLocation();
  return html`
    <header>
      <h1>mediagate</h1>
      <nav>${Nav.map(([href, name]) => html`<a href=${href} class=${path === href ? "active" : ""}>${name}</a>`)}</nav>
      <span class=${`live ${live.connected ? "on" : ""}`} title="live updates">${live.connected ? "● live" : "○ offline"}</span>
      <button data-testid="logout" onClick=${logOut}>Log out</button>
    </header>
    <main>
      <${LiveContext.Provider} value=${live}>
      <${Router}>
        <${Route} path="/" component=${Overview} />
        <${Route} path="/sessions" component=${Sessions} />
        <${Route} path="/containers" component=${Containers} />
        <${Route} path="/deliveries" component=${Deliveries} />
        <${Route} path="/logs" component=${Logs} />
        <${Route} path="/usage" component=${Usage} />
        <${Route} path="/approvals" component=${Approvals} />
        <${Route} path="/tasks" component=${Tasks} />
        <${Route} default component=${NotFound} />
      <//>
      <//>
    </main>`;
}

render(html`<${LocationProvider}><${Shell} /><//>`, document.getElementById("app")!);
