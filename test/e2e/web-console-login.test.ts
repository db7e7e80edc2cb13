import { startWebConsole, type WebConsole } from "@mediagate/web";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** Debian's chromium (scripts/ensure-chromium.sh): no browser is downloaded. */
const Chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const Token = "the-console-token-typed-before-the-script-ran-0123";

/**
 * The login page in a real browser, against the console's own server (no gateway behind it):
 * what a browser does with the token when the page's script has not run.
 */
describe("the web console's login page", () => {
  let web: WebConsole;
  let browser: Browser;
  const seen: string[] = [];

  beforeAll(async () => {
    web = await startWebConsole({
      listen: "127.0.0.1:0",
      token: Token,
      source: { sessions: () => [] } as never,
      logger: { info: () => {}, warn: () => {} },
    });
    browser = await chromium.launch({ executablePath: Chromium, args: ["--no-sandbox"] });
  });

  afterAll(async () => {
    await browser?.close();
    await web?.close();
  });

  it("never puts the token in a URL, even when the form is sent before its script runs", async () => {
    // Without JavaScript the form is the browser's own (the same happens when Enter is pressed
    // before the module script has loaded).
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    page.on("request", (request) => seen.push(request.url()));
    await page.goto(`${web.url}/login`);
    await page.fill("#token", Token);
    await Promise.all([page.waitForEvent("load"), page.press("#token", "Enter")]);
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.filter((url) => url.includes(Token))).toEqual([]);
    expect(page.url()).not.toContain(Token);
    await context.close();
  });
});
