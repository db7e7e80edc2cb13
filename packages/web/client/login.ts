/** The login page: exchanges the console token for a session cookie, then opens the console. */
const form = document.getElementById("login") as HTMLFormElement;
const error = document.getElementById("error") as HTMLElement;

form.addEventListener("submit", (event) => {
  event.preventDefault();
  void logIn();
});

async function logIn(): Promise<void> {
  error.textContent = "";
  const token = (document.getElementById("token") as HTMLInputElement).value.trim();
  const csrf = (await (await fetch("/api/csrf")).json()) as { token: string };
  const answer = await fetch("/login", {
    method: "POST",
    headers: { "content-type": "application/json", "x-csrf-token": csrf.token },
    body: JSON.stringify({ token }),
  });
  if (answer.ok) {
    location.assign("/");
    return;
  }
  if (answer.status === 429) {
    error.textContent = `Too many wrong tokens: try again in ${answer.headers.get("retry-after") ?? "a few"} s.`;
    return;
  }
  error.textContent =
    answer.status === 401 ? "Wrong token." : `Login failed (HTTP ${answer.status}).`;
}
