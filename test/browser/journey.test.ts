/**
 * Issue 22's "done means", in one journey through the browser alone (no set-up through the API):
 * a new user signs up, verifies with the e-mailed code, signs in, creates an organisation, invites
 * a colleague who opens the e-mailed link in another browser, signs up there and accepts; then the
 * user creates an API token, uses it, revokes it (then 401), adds a passkey, signs out and signs in
 * with the passkey alone.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestStack } from "../support/stack.ts";
import {
  checkPage,
  connectBrowser,
  describePageOnFailure,
  emailedLink,
  signUpAndVerify,
  startConsoleStack,
  virtualAuthenticator,
} from "./support.ts";

let browser: Browser;
let stack: TestStack;
let origin: string;
const contexts: BrowserContext[] = [];
let page: Page;
describePageOnFailure(() => page);
let restoreRelyingParty: (() => void) | undefined;
const suffix = `${Date.now()}-${Math.random().toString(36).slice(2, 6)}`;
const email = `journey-${suffix}@accounts.example.test`;
const colleague = `colleague-${suffix}@accounts.example.test`;
const organisation = `Journey ${suffix}`;

const heading = (on: Page, name: RegExp) => on.getByRole("heading", { level: 1, name });

async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ baseURL: origin });
  contexts.push(context);
  const created = await context.newPage();
  created.setDefaultTimeout(10_000);
  return { context, page: created };
}

beforeAll(async () => {
  ({ stack, origin } = await startConsoleStack());
  browser = await connectBrowser();
  const opened = await newPage();
  page = opened.page;
  ({ restore: restoreRelyingParty } = await virtualAuthenticator(opened.context, page, origin));
});
afterAll(async () => {
  restoreRelyingParty?.();
  for (const context of contexts) await context.close();
  await browser?.close();
  await stack?.stop();
});

describe("a new user's first steps, in the browser alone", () => {
  it("signs up, verifies, signs in and creates an organisation", async () => {
    await page.goto("/");
    await expect.poll(() => heading(page, /^sign in$/i).count()).toBe(1);
    await page
      .getByRole("link", { name: /^sign up$/i })
      .last()
      .click();
    await signUpAndVerify(page, email, "Ada", "Lovelace");
    await expect.poll(() => heading(page, /^organisations$/i).count()).toBe(1);
    await page.getByRole("button", { name: /^new organisation$/i }).click();
    await page.getByLabel("Organisation name").fill(organisation);
    await page.getByRole("button", { name: /^create$/i }).click();
    await expect.poll(() => heading(page, new RegExp(organisation)).count()).toBe(1);
    const nav = page.getByRole("navigation", { name: "Organisation" });
    for (const name of [
      "Proxies",
      "Targets",
      "Credentials",
      "Request logs",
      "Telemetry",
      "Members",
      "Notifications",
    ])
      expect(await nav.getByRole("link", { name, exact: true }).count(), name).toBe(1);
    expect(await nav.getByRole("link", { name: "Members", exact: true }).getAttribute("aria-current")).toBe(
      "page",
    );
    await checkPage(page, "journey-organisation");
  });

  it("invites a colleague, who opens the e-mail's link in another browser, signs up and accepts", async () => {
    await page.getByLabel("Email").fill(colleague);
    await page.getByLabel("Role", { exact: true }).selectOption("user");
    await page.getByRole("button", { name: /^send invite$/i }).click();
    await expect.poll(() => page.getByText(colleague).count()).toBeGreaterThan(0);

    const link = await emailedLink(colleague, `You are invited to join ${organisation}`, "/invites/");
    const other = (await newPage()).page;
    await other.goto(link);
    await expect.poll(() => heading(other, /you are invited/i).count()).toBe(1);
    await other
      .getByRole("link", { name: /^sign up$/i })
      .last()
      .click();
    await signUpAndVerify(other, colleague, "Grace", "Hopper");
    await expect.poll(() => other.getByRole("button", { name: /^accept$/i }).count()).toBe(1);
    await other.getByRole("button", { name: /^accept$/i }).click();
    await expect.poll(() => heading(other, new RegExp(organisation)).count()).toBe(1);

    await page.reload();
    const members = page.getByRole("region", { name: /^members$/i });
    await expect.poll(async () => (await members.textContent()) ?? "").toMatch(/Grace Hopper/);
    await checkPage(page, "journey-members");
  });

  it("creates an API token, uses it, revokes it: then it is refused", async () => {
    await page.getByRole("link", { name: /^settings$/i }).click();
    await page.getByRole("link", { name: /^keys$/i }).click();
    await page.getByLabel("Token name").fill("journey");
    await page.getByRole("button", { name: /create token/i }).click();
    const shown = page.getByTestId("new-token");
    await expect.poll(() => shown.count()).toBe(1);
    const token = (await shown.textContent()) ?? "";
    const call = () => fetch(`${stack.baseUrl}/api/clients`, { headers: { Authorization: token } });
    const used = await call();
    expect(used.status).toBe(200);
    expect(JSON.stringify(await used.json())).toContain(organisation);
    await page.getByRole("button", { name: /revoke journey/i }).click();
    await page
      .getByRole("dialog", { name: /revoke this token/i })
      .getByRole("button", { name: /^revoke$/i })
      .click();
    await expect.poll(() => page.getByRole("button", { name: /revoke journey/i }).count()).toBe(0);
    expect((await call()).status).toBe(401);
  });

  it("adds a passkey, signs out and signs in with the passkey alone", async () => {
    await page.getByRole("link", { name: /^settings$/i }).click();
    await page.getByLabel(/passkey name/i).fill("Journey laptop");
    await page.getByRole("button", { name: /add a passkey/i }).click();
    await expect.poll(() => page.getByText("Passkey added.").count()).toBe(1);
    await page
      .getByRole("button", { name: /^sign out$/i })
      .last()
      .click();
    await expect.poll(() => heading(page, /^sign in$/i).count()).toBe(1);
    await page.getByRole("button", { name: /sign in with a passkey/i }).click();
    await expect.poll(() => heading(page, /^organisations$/i).count()).toBe(1);
    await expect.poll(() => page.getByRole("link", { name: organisation }).count()).toBe(1);
    await checkPage(page, "journey-signed-in-with-passkey");
  });
});
