import { randomBytes } from "node:crypto";
import { mkdir, readFile, stat } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitUntil } from "../../test-support/wait.js";
import { tinyPng } from "../fakes/telegram/media-fixtures.js";
import { writeCommand } from "./harness/sandbox-files.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 4242;
/** Debian's chromium (scripts/ensure-chromium.sh): no browser is downloaded. */
const Chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
/** Screenshots of each page, for people to look at (gitignored). */
const Artifacts = new URL("../artifacts/web/", import.meta.url).pathname;

const Pages = ["/", "/sessions", "/containers", "/deliveries", "/logs"];
const DataEndpoints = [
  "/api/overview",
  "/api/sessions",
  "/api/containers",
  "/api/deliveries",
  "/api/logs",
  "/api/events",
  "/api/preview/any/0",
  "/assets/app.js",
];

/**
 * The web console (docs/web-console.md) end to end: the real gateway serving it, the Telegram
 * fake, the Docker engine, and Debian's chromium driven by playwright-core. Two bots: one
 * works, the other's getUpdates always fails (its channel must show as down).
 */
describe("web console in a real browser", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  let down: TelegramBot;
  let url = "";
  let token = "";
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start(
      "t-web",
      [{ admins: [Admin] }, { admins: [Admin], telegram: { pollTimeoutSeconds: 1 } }],
      { web: true },
    );
    bot = harness.bot(0);
    down = harness.bot(1);
    down.fake.failNext("getUpdates", { kind: "server_error", status: 502 }, 1_000_000);
    url = harness.gateway.webUrl ?? "";
    token = (await readFile(join(harness.home, "web-token"), "utf8")).trim();
    await mkdir(Artifacts, { recursive: true });
    browser = await chromium.launch({ executablePath: Chromium, args: ["--no-sandbox"] });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  const shot = (name: string) =>
    page.screenshot({ path: join(Artifacts, `${name}.png`), fullPage: true });
  const row = (key?: string) =>
    page.locator(
      key === undefined ? "[data-testid=session]" : `[data-testid=session][data-key="${key}"]`,
    );

  it("serves the token from the home, owner-only, and the console on loopback", async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect((await stat(join(harness.home, "web-token"))).mode & 0o777).toBe(0o600);
  });

  it("answers every page with a redirect to the login and every data endpoint with 401 without a session", async () => {
    for (const path of Pages) {
      const answer = await fetch(url + path, { redirect: "manual" });
      expect([answer.status, answer.headers.get("location")], path).toEqual([302, "/login"]);
    }
    for (const path of DataEndpoints) {
      const answer = await fetch(url + path);
      expect(answer.status, path).toBe(401);
    }
    // Actions too, even same-origin: no session, nothing done.
    const stop = await fetch(`${url}/api/sessions/stop`, {
      method: "POST",
      headers: { origin: url, "content-type": "application/json" },
      body: JSON.stringify({ sessionKey: "x" }),
    });
    expect(stop.status).toBe(401);
    // A made-up cookie is no session.
    const forged = await fetch(`${url}/api/overview`, {
      headers: { cookie: `mg_session=${randomBytes(32).toString("base64url")}` },
    });
    expect(forged.status).toBe(401);
    // The browser lands on the login page.
    await page.goto(`${url}/sessions`);
    expect(new URL(page.url()).pathname).toBe("/login");
  });

  it("refuses a wrong token and logs in with the right one into an HttpOnly, SameSite=Strict cookie", async () => {
    await page.goto(`${url}/login`);
    await page.fill("#token", "not-the-token-not-the-token-not-the-token");
    await page.click("button[type=submit]");
    await page.getByText("Wrong token.").waitFor();
    expect(await context.cookies()).not.toContainEqual(
      expect.objectContaining({ name: "mg_session" }),
    );
    await page.fill("#token", token);
    await page.click("button[type=submit]");
    await page.waitForURL(`${url}/`);
    const cookie = (await context.cookies()).find((c) => c.name === "mg_session");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    await page.getByRole("heading", { name: /Overview/ }).waitFor();
  });

  it("overview: the channel whose getUpdates fails shows as down, the other as up", async () => {
    await page.goto(`${url}/`);
    const bad = page.locator(`[data-testid=channel][data-profile="${down.profile}"]`);
    const good = page.locator(`[data-testid=channel][data-profile="${bot.profile}"]`);
    await waitFor(async () => expect(await bad.getAttribute("data-alive")).toBe("false"));
    expect(await bad.textContent()).toMatch(/down \(retrying\)/);
    expect(await bad.textContent()).toContain("getUpdates");
    await waitFor(async () => expect(await good.getAttribute("data-alive")).toBe("true"));
    expect(await page.getByTestId("engine").textContent()).toContain("reachable");
    await shot("overview");
  });

  it("sessions: a message through the fake appears live, and the stop button kills its running sleep", async () => {
    await page.goto(`${url}/sessions`);
    await page.getByTestId("no-sessions").waitFor();
    const mark = `web-${randomBytes(3).toString("hex")}`;
    // No reload from here on: the row and what it does arrive by the event stream.
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: `sleep 120 # ${mark}` }));
    const session = row();
    await waitFor(async () => expect(await session.getAttribute("data-state")).toBe("running"));
    await waitFor(async () =>
      expect(await session.getByTestId("doing").textContent()).toContain(`sleep 120 # ${mark}`),
    );
    // The status shows the command as it starts: the container may still be coming up.
    const container = await waitFor(() => bot.runningContainer());
    await waitFor(async () =>
      expect(await harness.docker.processes(container)).toContainEqual(
        expect.stringMatching(/sleep 120/),
      ),
    );
    await shot("sessions");
    await session.getByTestId("stop").click();
    await page
      .getByTestId("notice")
      .getByText(/Stopped: aborted the running turn/)
      .waitFor();
    await waitFor(async () =>
      expect(await harness.docker.processes(container)).not.toContainEqual(
        expect.stringMatching(/sleep 120/),
      ),
    );
    await waitFor(async () => expect(await session.getAttribute("data-state")).toBe("idle"));
    await harness.gateway.idle();
  });

  it("deliveries: a delivered PNG shows as a preview, a withheld file only its reason, a missing one the paths tried", async () => {
    const png = tinyPng();
    const secret = randomBytes(12).toString("hex");
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: [
          writeCommand("/workspace/dot.png", png),
          `mkdir -p /root/.ssh && printf ${secret} > /root/.ssh/id_rsa`,
          "echo MEDIA:/workspace/dot.png",
          "echo MEDIA:/root/.ssh/id_rsa",
          "echo MEDIA:/workspace/nope.txt",
          `printf 'note ${secret.slice(0, 4)}' > /workspace/note.txt`,
          "echo MEDIA:/workspace/note.txt",
        ].join("; "),
      }),
    );
    await page.goto(`${url}/deliveries`);
    const reply = page.locator("[data-testid=reply]").first();
    const delivered = reply.locator("[data-testid=file][data-status=delivered]").first();
    await delivered.waitFor();
    const image = delivered.getByTestId("preview");
    await waitFor(async () =>
      expect(
        await image.evaluate((element) => {
          const img = element as unknown as { complete: boolean; naturalWidth: number };
          return img.complete && img.naturalWidth;
        }),
      ).toBe(1),
    );
    const src = (await image.getAttribute("src")) ?? "";
    const bytes = await (await page.request.get(url + src)).body();
    expect(bytes.equals(png)).toBe(true);

    const withheld = reply.locator("[data-testid=file][data-status=withheld]");
    const text = await withheld.textContent();
    expect(text).toContain("withheld");
    expect(text).not.toContain(secret);
    expect(text).not.toContain("id_rsa");
    const replyId = (await reply.getAttribute("data-id")) ?? "";
    // Nothing but the delivered file has a preview: not the withheld one, not the missing one.
    for (const index of [1, 2]) {
      const answer = await page.request.get(`${url}/api/preview/${replyId}/${index}`);
      expect(answer.status(), `preview ${index}`).toBe(404);
    }
    expect((await page.content()).includes(secret)).toBe(false);

    // A text file shows its head, read through the same path.
    await waitFor(async () =>
      expect(await reply.getByTestId("text-head").textContent()).toBe(`note ${secret.slice(0, 4)}`),
    );

    const missing = reply.locator("[data-testid=file][data-status=missing]");
    expect(await missing.textContent()).toMatch(/nope\.txt[\s\S]*Tried:.*nope\.txt/);
    await shot("deliveries");
  });

  it("containers and logs: the profile's container with its processes; log lines filtered by level and session", async () => {
    await page.goto(`${url}/containers`);
    const container = page.locator(`[data-testid=container]`).first();
    await container.waitFor();
    expect(await container.textContent()).toContain(bot.profile);
    await shot("containers");

    await page.goto(`${url}/logs`);
    await page.getByText("turn finished").first().waitFor();
    await page.getByTestId("level").selectOption("error");
    await waitFor(async () => expect(await page.getByText("turn finished").count()).toBe(0));
    await page.getByTestId("level").selectOption("info");
    await page.getByTestId("session-filter").fill("no-such-session");
    await waitFor(async () => expect(await page.getByTestId("log-line").count()).toBe(0));
    await page.getByTestId("session-filter").fill(`${Admin}`);
    await page.getByText("turn finished").first().waitFor();
    await shot("logs");
  });

  it("tasks: a task made in the chat is listed with its next run; Pause, then Run now delivers", async () => {
    const made = await bot.ask(Admin, "/every 1h echo from-the-console");
    const id = /Task ([A-Za-z0-9_-]+):/.exec(made)?.[1] ?? "";
    await page.goto(`${url}/tasks`);
    const task = page.locator(`[data-testid=task][data-task="${id}"]`);
    await task.waitFor();
    expect(await task.textContent()).toContain("every 1h");
    expect(await task.textContent()).toContain("echo from-the-console");
    await task.getByTestId("pause").click();
    await page.getByText(`Task ${id} paused`).waitFor();
    await task.getByTestId("resume").waitFor();
    const since = bot.mark();
    await task.getByTestId("run").click();
    await page.getByText(`Task ${id} runs now`).waitFor();
    await waitUntil(() => bot.texts(Admin, since).includes("from-the-console"), "the run's reply");
    await shot("tasks");
    await bot.ask(Admin, `/tasks delete ${id}`);
  });

  it("logs: a flood of wrong logins is refused without a line each, and the Logs page keeps its earlier lines", async () => {
    // A login form of its own, as a script would use it: its CSRF token and cookie, no session.
    const form = await fetch(`${url}/api/csrf`);
    const csrf = ((await form.json()) as { token: string }).token;
    const cookie = form.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    const wrongLogin = () =>
      fetch(`${url}/login`, {
        method: "POST",
        headers: { origin: url, cookie, "x-csrf-token": csrf, "content-type": "application/json" },
        body: JSON.stringify({ token: "not-the-token-not-the-token-not-the-token" }),
      }).then((answer) => answer.status);
    // More wrong logins than the log ring (2,000 lines in the harness) holds.
    const statuses: number[] = [];
    for (let batch = 0; batch < 125; batch += 1) {
      statuses.push(...(await Promise.all(Array.from({ length: 20 }, wrongLogin))));
    }
    await page.goto(`${url}/logs`);
    await page.getByText("turn finished").first().waitFor();
    // Most were answered without looking at the token: the address had to wait.
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(2_400);
    expect(statuses.filter((status) => status !== 429 && status !== 401)).toEqual([]);
    expect(harness.logs.filter((line) => line.includes("login refused"))).toEqual([]);
  });

  it("reset asks first on a shared slot (as /reset does), then removes the container; reap answers", async () => {
    await page.goto(`${url}/sessions`);
    await row().first().getByTestId("reset").click();
    const notice = page.getByTestId("notice");
    await notice.getByText(/is shared: 1 session known to this gateway/).waitFor();
    expect((await bot.containers()).filter((c) => c.state === "running")).toHaveLength(1);
    await notice.getByTestId("confirm-reset").click();
    await notice.getByText(/Reset: new conversation started, removed the container/).waitFor();
    expect(await bot.containers()).toEqual([]);
    await waitFor(() =>
      expect(harness.logs.join("\n")).toMatch(/"by":"web:[0-9a-f]{8}".*web console: \/reset done/),
    );

    await page.goto(`${url}/containers`);
    await page.getByText("No containers.").waitFor();
    await page.getByTestId("reap").click();
    await page.getByText("Nothing to reap.").waitFor();
  });

  it("refuses a cross-site form post (Origin) and a same-site one without the CSRF token", async () => {
    await page.goto(`${url}/sessions`);
    const key = (await row().first().getAttribute("data-key")) ?? "";
    const resets = () => harness.logs.filter((l) => l.includes("web console: reset")).length;
    const resetsBefore = resets();
    // An attacker's page on another port of the same host: same site for the cookie, another
    // origin for the browser.
    const attacker: Server = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html" });
      response.end(
        `<form id="f" method="POST" action="${url}/api/slots/reset">` +
          `<input name="sessionKey" value="${key}"><input name="confirm" value="true"></form>` +
          `<script>document.getElementById("f").submit()</script>`,
      );
    });
    await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
    try {
      const port = (attacker.address() as AddressInfo).port;
      const refused = page.waitForResponse((r) => r.url().startsWith(`${url}/api/slots/reset`));
      await page.goto(`http://127.0.0.1:${port}/`);
      expect((await refused).status()).toBe(403);
    } finally {
      attacker.close();
    }
    // Counted for the summary line (docs/web-console.md), not logged one line each.
    expect(harness.logs.join("\n")).not.toContain("cross-site request refused");
    expect(resets()).toBe(resetsBefore);
    // Same origin, with the session cookie, but without the CSRF token: refused too.
    await page.goto(`${url}/sessions`);
    const status = await page.evaluate(async (sessionKey) => {
      const answer = await fetch("/api/orphans/reap", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ sessionKey }),
      });
      return answer.status;
    }, key);
    expect(status).toBe(403);
  });

  it("fits a phone's width", async () => {
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    for (const path of ["/", "/sessions", "/deliveries"]) {
      await phone.goto(url + path);
      await phone.locator("main h2").first().waitFor();
      const overflow = await phone.evaluate(() => {
        const view = globalThis as unknown as {
          document: { documentElement: { scrollWidth: number } };
          innerWidth: number;
        };
        return view.document.documentElement.scrollWidth - view.innerWidth;
      });
      expect(overflow, path).toBeLessThanOrEqual(0);
    }
    await phone.goto(`${url}/sessions`);
    await phone.locator("[data-testid=session]").first().waitFor();
    await phone.screenshot({ path: join(Artifacts, "sessions-phone.png"), fullPage: true });
    await phone.close();
  });

  it("logs out: the session ends and its cookie opens nothing", async () => {
    const before = (await context.cookies()).find((c) => c.name === "mg_session")?.value ?? "";
    await page.goto(`${url}/`);
    await page.getByTestId("logout").click();
    await page.waitForURL(`${url}/login`);
    const answer = await fetch(`${url}/api/overview`, {
      headers: { cookie: `mg_session=${before}` },
    });
    expect(answer.status).toBe(401);
    await page.goto(`${url}/`);
    expect(new URL(page.url()).pathname).toBe("/login");
    expect(harness.logs.join("\n")).toContain("web console: logged out");
  });
});
