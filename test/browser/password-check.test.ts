/**
 * The new-password check in the console (docs/accounts.md "Password policy") in
 * Chromium against the local stack: the Sign-up and Reset password forms show why a password will
 * be refused ("Too short", "Too common or too easy to guess") on leaving the field and as the person
 * types, before anything is sent; a form with such a password is not sent; the estimator's code
 * loads only when a password is first checked. Every state is checked with axe and photographed.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestStack } from "../support/stack.ts";
import { checkPage, connectBrowser, describePageOnFailure, startConsoleStack } from "./support.ts";

let browser: Browser;
let stack: TestStack;
let origin: string;
let context: BrowserContext;
let page: Page;
describePageOnFailure(() => page);

/** The API requests (method and path) and the scripts the page fetched, in order. */
const apiCalls: string[] = [];
const scripts: string[] = [];

beforeAll(async () => {
  ({ stack, origin } = await startConsoleStack());
  browser = await connectBrowser();
  context = await browser.newContext({ baseURL: origin });
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on("request", (request) => {
    const url = new URL(request.url());
    if (url.pathname.startsWith("/auth/")) apiCalls.push(`${request.method()} ${url.pathname}`);
    if (request.resourceType() === "script") scripts.push(url.pathname);
  });
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await stack?.stop();
});

/** The text of the field's description (its hint and its error), as assistive technology reads it. */
const descriptionOf = (label: string) =>
  page.getByLabel(label, { exact: true }).evaluate((input) =>
    (input.getAttribute("aria-describedby") ?? "")
      .split(" ")
      .map((id: string) => input.ownerDocument.getElementById(id)?.textContent ?? "")
      .join(" "),
  );

describe("the Sign-up form's password", () => {
  it("says why before anything is sent: too short, then too common, and the check's code loads only then", async () => {
    await page.goto("/sign-up");
    await expect.poll(() => page.getByRole("heading", { level: 1, name: /sign up/i }).count()).toBe(1);
    const scriptsBefore = scripts.length;
    await page.getByLabel("Email").fill("ada.lovelace@check.example.test");
    await page.getByLabel("First name").fill("Ada");
    await page.getByLabel("Last name").fill("Lovelace");
    await page.getByLabel("Password").fill("hunter2");
    await page.getByLabel("Password").blur();
    await expect.poll(() => descriptionOf("Password")).toMatch(/Too short: at least 12 characters/);
    expect(await page.getByLabel("Password").getAttribute("aria-invalid")).toBe("true");
    await checkPage(page, "password-check-too-short");
    // Typing on: the reason follows the value.
    await page.getByLabel("Password").fill("password1234");
    await expect.poll(() => descriptionOf("Password")).toMatch(/Too common or too easy to guess/);
    // The estimator and its dictionary came as scripts of their own, on this first check.
    expect(scripts.length).toBeGreaterThan(scriptsBefore);
    await checkPage(page, "password-check-too-common");
    // Built from the person's own names.
    await page.getByLabel("Password").fill("AdaLovelace2024");
    await page.getByLabel("Password").blur();
    await expect.poll(() => descriptionOf("Password")).toMatch(/Too common or too easy to guess/);
    // Submitting such a password sends nothing.
    await page.getByRole("button", { name: /create account/i }).click();
    await expect
      .poll(() =>
        page.getByLabel("Password").evaluate((input) => input === input.ownerDocument.activeElement),
      )
      .toBe(true);
    expect(apiCalls.filter((call) => call === "POST /auth/sign-up")).toEqual([]);
    // A passphrase clears the message, and the form is sent.
    await page.getByLabel("Password").fill("seven lanterns over a quiet harbour");
    await expect.poll(() => descriptionOf("Password")).not.toMatch(/Too /);
    expect(await page.getByLabel("Password").getAttribute("aria-invalid")).toBeNull();
    await checkPage(page, "password-check-accepted");
    await page.getByRole("button", { name: /create account/i }).click();
    await expect.poll(() => page.getByLabel("Code").count()).toBe(1);
    expect(apiCalls.filter((call) => call === "POST /auth/sign-up")).toEqual(["POST /auth/sign-up"]);
  }, 60_000);
});

describe("the Reset password form's new password", () => {
  it("says why on leaving the field, and sends nothing while the password would be refused", async () => {
    await page.goto("/reset-password?email=someone%40check.example.test&code=123456");
    await expect.poll(() => page.getByLabel("New password").count()).toBe(1);
    await page.getByLabel("New password").fill("qwertyuiop12");
    await page.getByLabel("New password").blur();
    await expect.poll(() => descriptionOf("New password")).toMatch(/Too common or too easy to guess/);
    await checkPage(page, "password-check-reset");
    await page.getByRole("button", { name: /set new password/i }).click();
    await expect
      .poll(() =>
        page.getByLabel("New password").evaluate((input) => input === input.ownerDocument.activeElement),
      )
      .toBe(true);
    expect(apiCalls.filter((call) => call === "POST /auth/reset-password")).toEqual([]);
  }, 60_000);
});
