/**
 * Passkeys in the console (issue 22), in Chromium with its virtual authenticator (CDP
 * `WebAuthn.addVirtualAuthenticator`: a platform authenticator with resident keys and user
 * verification): a signed-in user adds a passkey in Settings, signs out, signs in with the passkey
 * alone, and removes it after a confirmation. The relying party is `localhost` with the console's
 * origin (WebAuthn refuses IP addresses).
 */
import type { Browser, BrowserContext, CDPSession, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { latestEmailedCode, send, TEST_PASSWORD } from "../support/sessions.ts";
import type { TestStack, TestUser } from "../support/stack.ts";
import {
  checkPage,
  connectBrowser,
  describePageOnFailure,
  startConsoleStack,
  virtualAuthenticator,
} from "./support.ts";

let browser: Browser;
let stack: TestStack;
let origin: string;
let context: BrowserContext;
let page: Page;
describePageOnFailure(() => page);
let cdp: CDPSession;
/** The virtual authenticator of the page (CDP). */
let authenticatorId: string;
let restoreRelyingParty: (() => void) | undefined;
let user: TestUser;

beforeAll(async () => {
  ({ stack, origin } = await startConsoleStack());
  user = await stack.newUser();
  await send(stack.baseUrl, "POST", "/auth/forgot-password", { body: { email: user.email } });
  const code = await latestEmailedCode(user.email, "Reset your password");
  const reset = await send(stack.baseUrl, "POST", "/auth/reset-password", {
    body: { email: user.email, code, password: TEST_PASSWORD },
  });
  expect(reset.status).toBe(200);
  browser = await connectBrowser();
  context = await browser.newContext({ baseURL: origin });
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  // The handlers run in this process and read the relying party at each call.
  ({
    cdp,
    authenticatorId,
    restore: restoreRelyingParty,
  } = await virtualAuthenticator(context, page, origin));
});
afterAll(async () => {
  restoreRelyingParty?.();
  await context?.close();
  await browser?.close();
  await stack?.stop();
});

const organisationsShown = () =>
  expect.poll(() => page.getByRole("heading", { level: 1, name: /organisations/i }).count()).toBe(1);

describe("passkeys in the console", () => {
  it("adds a passkey in Settings after a password sign-in", async () => {
    await page.goto("/sign-in");
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(TEST_PASSWORD);
    await page.getByRole("button", { name: /^sign in$/i }).click();
    await organisationsShown();
    await page.getByRole("link", { name: /^settings$/i }).click();
    await expect.poll(() => page.getByText("No passkeys yet.").count()).toBe(1);
    await page.getByLabel(/passkey name/i).fill("Test laptop");
    await page.getByRole("button", { name: /add a passkey/i }).click();
    await expect.poll(() => page.getByText("Passkey added.").count()).toBe(1);
    const list = page.getByRole("list", { name: /your passkeys/i });
    await expect.poll(() => list.getByRole("listitem").count()).toBe(1);
    expect(await list.textContent()).toMatch(/Test laptop.*never used/);
    const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
    expect(credentials).toHaveLength(1);
    expect(credentials[0]).toMatchObject({ isResidentCredential: true, rpId: "localhost" });
    await checkPage(page, "settings-passkeys");
  });

  it("signs out, then signs in with the passkey alone (no address typed)", async () => {
    await page
      .getByRole("button", { name: /^sign out$/i })
      .last()
      .click();
    await expect.poll(() => page.getByRole("heading", { level: 1, name: /sign in/i }).count()).toBe(1);
    expect(await page.evaluate(async () => (await fetch("/auth/session")).status)).toBe(401);
    await page.getByRole("button", { name: /sign in with a passkey/i }).click();
    await organisationsShown();
    expect(await page.evaluate(async () => (await fetch("/auth/session")).status)).toBe(200);
    await page.getByRole("link", { name: /^settings$/i }).click();
    const list = page.getByRole("list", { name: /your passkeys/i });
    await expect.poll(async () => (await list.textContent()) ?? "").toMatch(/last used/);
  });

  it("removes the passkey after a confirmation; it then no longer signs in", async () => {
    await page.getByRole("button", { name: /remove test laptop/i }).click();
    const dialog = page.getByRole("dialog", { name: /remove this passkey\?/i });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await checkPage(page, "settings-passkey-remove-dialog");
    await dialog.getByRole("button", { name: /^remove$/i }).click();
    await expect.poll(() => page.getByText("No passkeys yet.").count()).toBe(1);
    const listed = await send(stack.baseUrl, "GET", "/auth/passkeys", {
      headers: { Cookie: (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ") },
    });
    expect(listed.status).toBe(200);
    expect(listed.body.passkeys).toEqual([]);
    // The authenticator still holds the credential; the service no longer knows it.
    await page
      .getByRole("button", { name: /^sign out$/i })
      .last()
      .click();
    await expect.poll(() => page.getByRole("heading", { level: 1, name: /sign in/i }).count()).toBe(1);
    await page.getByRole("button", { name: /sign in with a passkey/i }).click();
    await expect.poll(() => page.getByText(/passkey not recognised/i).count()).toBe(1);
    expect(await page.evaluate(async () => (await fetch("/auth/session")).status)).toBe(401);
    await checkPage(page, "sign-in-passkey-refused");
  });
});
