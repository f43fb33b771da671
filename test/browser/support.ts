/**
 * Browser test support: the shared Chromium, a local stack serving the built console at
 * http://localhost:PORT (WebAuthn refuses IP addresses), axe checks and screenshots.
 */
import { mkdir } from "node:fs/promises";
import { AxeBuilder } from "@axe-core/playwright";
import { type Browser, type BrowserContext, type CDPSession, chromium, type Page } from "playwright-core";
import { afterEach, expect, inject } from "vitest";
import type { LocalStackOptions } from "#local/runner.ts";
import { sentEmails } from "../support/emulator.ts";
import { signedInUser, TEST_PASSWORD } from "../support/sessions.ts";
import { startTestStack, type TestStack, type TestUser } from "../support/stack.ts";

export const PASSWORD = TEST_PASSWORD;
export const SCREENSHOTS = "test-results/screenshots";

export async function connectBrowser(): Promise<Browser> {
  return chromium.connect(inject("browserWsEndpoint"));
}

/** The local stack with the console, and its origin on localhost (`streams` for telemetry). */
export async function startConsoleStack(
  options: LocalStackOptions = {},
): Promise<{ stack: TestStack; origin: string }> {
  const stack = await startTestStack(options);
  return { stack, origin: `http://localhost:${new URL(stack.baseUrl).port}` };
}

/**
 * After a failed test of this file, prints where `page()` is and what its main region says (CI
 * keeps no screenshots; this is what a failure leaves to read).
 */
export function describePageOnFailure(page: () => Page | undefined): void {
  afterEach(async ({ task }) => {
    const current = page();
    if (task.result?.state !== "fail" || !current) return;
    const text = await current
      .locator("body")
      .innerText({ timeout: 2_000 })
      .catch((error: Error) => `(no text: ${error.message})`);
    console.error(`[${task.name}] failed on ${current.url()}:\n${text.slice(0, 2_000)}`);
  });
}

/** No axe violation of impact serious or critical on the page as it is now. */
export async function expectAccessible(page: Page): Promise<void> {
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(
    serious.map(
      (v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
    ),
  ).toEqual([]);
}

/** Checks the page with axe and saves its screenshot as test-results/screenshots/<name>.png. */
export async function checkPage(page: Page, name: string): Promise<void> {
  await expectAccessible(page);
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true });
}

/** The path and query of the newest link to `path` (or a path beginning so) e-mailed to `email` (to open on the test's origin). */
export async function emailedLink(email: string, subject: string, path: string): Promise<string> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const messages = (await sentEmails(email)).filter((message) => message.subject === subject);
    // An HTML body escapes "&" in its links (`&amp;`, or `&#38;` as lib/email.ts writes it).
    const body = messages.at(-1)?.body.replace(/&amp;|&#38;/g, "&") ?? "";
    const escaped = path.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    // `path` is the link's path or its beginning (`/invites/`), followed by a query.
    const link = new RegExp(`https?://[^\\s"<>]+${escaped}[^\\s"<>?]*\\?[^\\s"<>]+`).exec(body)?.[0];
    if (link) {
      const url = new URL(link);
      return `${url.pathname}${url.search}`;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no ${path} link e-mailed to ${email} (${subject})`);
}

export async function emailedCode(email: string, subject: string): Promise<string> {
  const messages = (await sentEmails(email)).filter((message) => message.subject === subject);
  const code = /code is (\d{6})/.exec(messages.at(-1)?.body.replace(/<[^>]*>/g, "") ?? "")?.[1];
  if (!code) throw new Error(`no code e-mailed to ${email} (${subject})`);
  return code;
}

/**
 * A browser context signed in as a new user of `stack` (their session cookie set for `origin`), with
 * a page whose relative URLs are on the console's origin. The user also has a token (`user.api`
 * calls the API with it) for set-up through the API.
 */
export async function signedInConsole(
  browser: Browser,
  stack: TestStack,
  origin: string,
): Promise<{ context: BrowserContext; page: Page; user: TestUser & { cookie: string } }> {
  const user = await signedInUser(stack);
  const context = await browser.newContext({ baseURL: origin });
  const [name = "", value = ""] = user.cookie.split(/=(.*)/s);
  await context.addCookies([{ name, value, url: origin, httpOnly: true, sameSite: "Lax" }]);
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  return { context, page, user };
}

/** A new organisation of `user` (through the API), answering its clientId. */
export async function newOrganisation(
  user: TestUser,
  name = `Org ${Math.random().toString(36).slice(2, 8)}`,
) {
  const answer = await user.api.post("/api/clients", { clientName: name });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return String((answer.body as { clients: Array<{ clientId: string }> }).clients[0]?.clientId);
}

/**
 * A virtual platform authenticator on `page` (CDP `WebAuthn.addVirtualAuthenticator`: resident keys,
 * user verification, presence simulated), and the relying party set to the console's origin for
 * the handlers running in this process (restored by the returned `restore`).
 */
export async function virtualAuthenticator(
  context: BrowserContext,
  page: Page,
  origin: string,
): Promise<{ cdp: CDPSession; authenticatorId: string; restore: () => void }> {
  const saved = { rpId: process.env.WEBAUTHN_RP_ID, origin: process.env.WEBAUTHN_ORIGIN };
  process.env.WEBAUTHN_RP_ID = "localhost";
  process.env.WEBAUTHN_ORIGIN = origin;
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  const restore = () => {
    for (const [name, value] of [
      ["WEBAUTHN_RP_ID", saved.rpId],
      ["WEBAUTHN_ORIGIN", saved.origin],
    ] as const)
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
  };
  return { cdp, authenticatorId, restore };
}

/** Sign-up, then the e-mailed code, as the Sign-up and Verify pages ask; then signs in there with the same address (it ends where the console sends a signed-in user). */
export async function signUpAndVerify(on: Page, address: string, firstName: string, lastName: string) {
  if (!(await on.getByLabel("Email").inputValue())) await on.getByLabel("Email").fill(address);
  await on.getByLabel("Password").fill(PASSWORD);
  await on.getByLabel("First name").fill(firstName);
  await on.getByLabel("Last name").fill(lastName);
  await on.getByRole("button", { name: /create account/i }).click();
  await expect.poll(() => on.getByLabel("Code").count()).toBe(1);
  await on.getByLabel("Code").fill(await emailedCode(address, "Verify your e-mail address"));
  await on.getByRole("button", { name: /^verify$/i }).click();
  await expect.poll(() => on.getByRole("status").textContent()).toMatch(/verified/i);
  await on
    .getByRole("link", { name: /^sign in$/i })
    .last()
    .click();
  expect(await on.getByLabel("Email").inputValue()).toBe(address);
  await on.getByLabel("Password").fill(PASSWORD);
  await on.getByRole("button", { name: /^sign in$/i }).click();
}
