/** The console's JSON API as the pages call it: CSRF header on posts, 401 sends to the login. */

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

/** Whether the page is already on its way to the login page. */
export function isLeaving(): boolean {
  return leaving;
}

/** Sends the page to the login page (once) and stops the caller. */
export function toLogin(): never {
  if (!leaving) {
    leaving = true;
    location.assign("/login");
  }
  throw new Error("logged out");
}

/** GETs JSON from `path`. */
export async function get<T>(path: string): Promise<T> {
  const answer = await fetch(path);
  if (answer.status === 401) toLogin();
  if (!answer.ok) throw new Error(`${path}: HTTP ${answer.status}`);
  return (await answer.json()) as T;
}

/** POSTs `body` as JSON to `path`; a refusal throws with the server's `error`. */
export async function post<T>(path: string, body: unknown = {}): Promise<T> {
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

/** Ends the login session and goes to the login page (the event stream's error stays quiet). */
export async function logOut(): Promise<void> {
  const request = post("/logout");
  leaving = true;
  await request.catch(() => undefined);
  location.assign("/login");
}
