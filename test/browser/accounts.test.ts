/**
 * The web console's account pages in Chromium against the real local stack: sign-up, verification
 * by the e-mailed link, sign-in, settings and keys (create a token, use it, revoke it in the
 * dialog, then 401), sign-out; forgot and reset password by the e-mailed link. Every page is
 * checked with axe and photographed (test-results/screenshots/).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestStack } from "../support/stack.ts";
import {
  checkPage,
  connectBrowser,
  describePageOnFailure,
  emailedCode,
  emailedLink,
  PASSWORD,
  startConsoleStack,
} from "./support.ts";

let browser: Browser;
let stack: TestStack;
let origin: string;
let context: BrowserContext;
let page: Page;
describePageOnFailure(() => page);
const email = `console-${Date.now()}@accounts.example.test`;

beforeAll(async () => {
  ({ stack, origin } = await startConsoleStack());
  browser = await connectBrowser();
  context = await browser.newContext({ baseURL: origin });
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await stack?.stop();
});

async function signIn(address: string, password: string) {
  await page.goto("/sign-in");
  await page.getByLabel("Email").fill(address);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: /^sign in$/i }).click();
  await expect.poll(() => page.getByRole("heading", { level: 1, name: /organisations/i }).count()).toBe(1);
}

describe("the console's frame and serving", () => {
  it("serves index.html for console paths with the security headers, and leaves the API's paths alone", async () => {
    const answer = await fetch(`${origin}/settings/keys`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^text\/html/);
    expect(answer.headers.get("cache-control")).toBe("no-cache");
    expect(answer.headers.get("content-security-policy")).toMatch(/script-src 'self'/);
    expect(answer.headers.get("content-security-policy")).toMatch(/frame-ancestors 'none'/);
    expect(answer.headers.get("x-content-type-options")).toBe("nosniff");
    expect(answer.headers.get("referrer-policy")).toBeTruthy();
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(await answer.text())?.[1];
    expect(asset).toBeTruthy();
    const script = await fetch(`${origin}${asset}`);
    expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(script.headers.get("cache-control")).toMatch(/immutable/);
    const unknownApi = await fetch(`${origin}/api/nothing-here`);
    expect(unknownApi.status).toBe(404);
    expect(await unknownApi.json()).toEqual({ message: "Route not found" });
    expect((await fetch(`${origin}/auth/nothing`)).headers.get("content-type")).toMatch(/json/);
    expect((await fetch(`${origin}/openapi.json`)).headers.get("content-type")).toMatch(/json/);
  });
});

describe("sign-up, verification, sign-in, keys and sign-out", () => {
  it("signs up and lands on the Verify page", async () => {
    await page.goto("/sign-up");
    await expect.poll(() => page.getByRole("main").count()).toBe(1);
    expect(await page.getByRole("navigation").count()).toBeGreaterThan(0);
    expect(await page.getByRole("link", { name: /skip to content/i }).count()).toBe(1);
    await checkPage(page, "sign-up");
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("short");
    await page.getByLabel("First name").fill("Ada");
    await page.getByLabel("Last name").fill("Lovelace");
    await page.getByRole("button", { name: /create account/i }).click();
    // The password check says why next to the field, before anything is sent.
    await expect.poll(() => page.getByText(/at least 12 characters/i).count()).toBe(1);
    await checkPage(page, "sign-up-error");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: /create account/i }).click();
    await expect.poll(() => page.getByLabel("Code").count()).toBe(1);
    expect(await page.getByRole("button", { name: /^verify$/i }).count()).toBe(1);
    await checkPage(page, "verify");
  });

  it("a wrong code shows the API's error; the e-mail's link verifies by itself", async () => {
    const code = await emailedCode(email, "Verify your e-mail address");
    await page.getByLabel("Code").fill(String((Number(code) + 1) % 1_000_000).padStart(6, "0"));
    await page.getByRole("button", { name: /^verify$/i }).click();
    await expect.poll(() => page.getByRole("alert").count()).toBeGreaterThan(0);
    await page.goto(await emailedLink(email, "Verify your e-mail address", "/verify-email"));
    await expect.poll(() => page.getByRole("status").textContent(), { timeout: 10_000 }).toMatch(/verified/i);
    await checkPage(page, "verified");
  });

  it("signs in (a wrong password is shown) and lists the organisations", async () => {
    await page.goto("/sign-in");
    expect(await page.getByRole("link", { name: /forgot password\?/i }).count()).toBe(1);
    expect(await page.getByRole("button", { name: /sign in with a passkey/i }).count()).toBe(1);
    await checkPage(page, "sign-in");
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("not the password at all");
    await page.getByRole("button", { name: /^sign in$/i }).click();
    await expect.poll(() => page.getByRole("alert").count()).toBeGreaterThan(0);
    await signIn(email, PASSWORD);
  });

  it("settings: the profile and the active sessions", async () => {
    await page.getByRole("link", { name: /^settings$/i }).click();
    await expect.poll(() => page.getByRole("heading", { name: /active sessions/i }).count()).toBe(1);
    await expect.poll(() => page.getByRole("button", { name: /sign out of this browser/i }).count()).toBe(1);
    expect(await page.getByLabel("First name").inputValue()).toBe("Ada");
    await checkPage(page, "settings");
  });

  it("keys: creates a token, uses it, revokes it in the dialog, then it is a 401", async () => {
    await page.getByRole("link", { name: /^keys$/i }).click();
    await page.getByLabel("Token name").fill("console test");
    await page.getByRole("button", { name: /create token/i }).click();
    const shown = page.getByTestId("new-token");
    await expect.poll(() => shown.count()).toBe(1);
    const token = (await shown.textContent()) ?? "";
    expect(token).toMatch(/^u-/);
    expect(await page.getByRole("button", { name: /copy token/i }).count()).toBe(1);
    await checkPage(page, "keys");
    const used = await fetch(`${stack.baseUrl}/api/users`, { headers: { Authorization: token } });
    expect(used.status).toBe(200);
    await page.getByRole("button", { name: /revoke console test/i }).click();
    const dialog = page.getByRole("dialog", { name: /revoke this token/i });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await checkPage(page, "keys-revoke-dialog");
    await dialog.getByRole("button", { name: /^revoke$/i }).click();
    await expect.poll(() => page.getByRole("button", { name: /revoke console test/i }).count()).toBe(0);
    const revoked = await fetch(`${stack.baseUrl}/api/users`, { headers: { Authorization: token } });
    expect(revoked.status).toBe(401);
  });

  it("signs out: the session is gone and a signed-in page sends to Sign-in", async () => {
    await page.goto("/settings");
    await expect.poll(() => page.getByRole("heading", { name: /active sessions/i }).count()).toBe(1);
    await page
      .getByRole("main")
      .getByRole("button", { name: /^sign out$/i })
      .click();
    await expect.poll(() => page.getByRole("heading", { level: 1, name: /^sign in$/i }).count()).toBe(1);
    expect(await page.evaluate(async () => (await fetch("/auth/session")).status)).toBe(401);
    await page.goto("/settings");
    await expect.poll(() => new URL(page.url()).pathname).toBe("/sign-in");
  });
});

describe("forgot and reset password", () => {
  it("sends the reset e-mail; its link opens the form with the code filled in; the new password signs in", async () => {
    await page.goto("/forgot-password");
    await checkPage(page, "forgot-password");
    await page.getByLabel("Email").fill(email);
    await page.getByRole("button", { name: /send reset code/i }).click();
    await expect.poll(() => page.getByRole("status").count()).toBe(1);
    const link = await emailedLink(email, "Reset your password", "/reset-password");
    await page.goto(link);
    const code = new URL(link, origin).searchParams.get("code");
    expect(await page.getByLabel("Code").inputValue()).toBe(code);
    await checkPage(page, "reset-password");
    const newPassword = "a new and longer passphrase";
    await page.getByLabel("New password").fill(newPassword);
    await page.getByRole("button", { name: /set new password/i }).click();
    await expect.poll(() => page.getByRole("status").count()).toBe(1);
    await signIn(email, newPassword);
    await expect.poll(() => page.getByText(/not a member of any organisation/i).count()).toBe(1);
    await checkPage(page, "organisations");
  });
});
