/**
 * Recovery ends every way in (docs/accounts.md#recovery-ends-every-way-in), in Chromium against the real local stack: a reset through
 * the page says what it revoked and lists the passkeys, each removable in one click; the reset
 * e-mail's `/remove-passkey` link removes one (on the button, not on load); a password change in
 * Settings signs out another browser when "Sign out everywhere else" is checked and keeps it when
 * not, and a wrong current password is shown at its field; a scheduled account deletion signs out
 * and lands on Sign-in, whose password sign-in offers to cancel the deletion (a passkey sign-in
 * asks for the password). Passkeys come from Chromium's virtual authenticator, one per browser
 * context (a discoverable credential is picked by the authenticator, so one user each). Every new
 * page state is checked with axe and photographed.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sentEmails } from "../support/emulator.ts";
import { send, signIn } from "../support/sessions.ts";
import type { TestStack } from "../support/stack.ts";
import {
  checkPage,
  connectBrowser,
  describePageOnFailure,
  emailedLink,
  PASSWORD,
  signedInConsole,
  startConsoleStack,
  virtualAuthenticator,
} from "./support.ts";

let browser: Browser;
let stack: TestStack;
let origin: string;
/** The page a failure describes: the one the running test looks at. */
let page: Page | undefined;
describePageOnFailure(() => page);
const contexts: BrowserContext[] = [];
const restores: Array<() => void> = [];

beforeAll(async () => {
  ({ stack, origin } = await startConsoleStack());
  browser = await connectBrowser();
});
afterAll(async () => {
  for (const restore of restores.reverse()) restore();
  for (const context of contexts) await context.close();
  await browser?.close();
  await stack?.stop();
});

/** A new user signed in to a browser context of their own. */
async function consoleUser() {
  const signed = await signedInConsole(browser, stack, origin);
  contexts.push(signed.context);
  return signed;
}

/** A new user signed in, with a passkey named `name` added in Settings (the context's virtual authenticator). */
async function consoleUserWithPasskey(name: string) {
  const signed = await consoleUser();
  const { restore } = await virtualAuthenticator(signed.context, signed.page, origin);
  restores.push(restore);
  await signed.page.goto("/settings");
  await signed.page.getByLabel(/passkey name/i).fill(name);
  await signed.page.getByRole("button", { name: /add a passkey/i }).click();
  await expect.poll(() => signed.page.getByText("Passkey added.").count()).toBe(1);
  return signed;
}

/** A browser context with no session. */
async function signedOutPage(): Promise<Page> {
  const context = await browser.newContext({ baseURL: origin });
  contexts.push(context);
  const fresh = await context.newPage();
  fresh.setDefaultTimeout(10_000);
  return fresh;
}

/** A new API token of the page's user (the page's session calls the API). */
const newToken = (on: Page, userId: string) =>
  on.evaluate(async (id) => {
    const answer = await fetch(`/api/users/${id}/tokens`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ tokenName: "made before the recovery" }),
    });
    return ((await answer.json()) as { tokens: Array<{ token: string }> }).tokens[0]?.token ?? "";
  }, userId);

/** How many sessions and API tokens the page's user has now (what a revocation should count). */
const holdings = (on: Page, userId: string) =>
  on.evaluate(async (id) => {
    const sessions = (await (await fetch("/auth/sessions")).json()) as { sessions: unknown[] };
    const tokens = (await (await fetch(`/api/users/${id}/tokens`)).json()) as { tokens: unknown[] };
    return { sessions: sessions.sessions.length, tokens: tokens.tokens.length };
  }, userId);

const tokenStatus = async (token: string) =>
  (await fetch(`${stack.baseUrl}/api/users`, { headers: { Authorization: token } })).status;
const sessionStatus = async (cookie: string) =>
  (await send(stack.baseUrl, "GET", "/auth/session", { headers: { Cookie: cookie } })).status;
const passkeysOf = async (email: string, password: string) =>
  (
    await send(stack.baseUrl, "GET", "/auth/passkeys", {
      headers: { Cookie: await signIn(stack.baseUrl, email, password) },
    })
  ).body.passkeys as Array<{ passkeyId: string; passkeyName: string }>;

/** The texts an input's `aria-describedby` points at (its hint and its error). */
const descriptionOf = (on: Page, label: string) =>
  on.getByLabel(label, { exact: true }).evaluate((input) =>
    (input.getAttribute("aria-describedby") ?? "")
      .split(" ")
      .map((id: string) => input.ownerDocument.getElementById(id)?.textContent ?? "")
      .join(" "),
  );

/** Forgot password, then the e-mail's link, then a new password, on `on` (signed out). */
async function resetThroughThePage(on: Page, email: string, newPassword: string) {
  const resetMails = async () =>
    (await sentEmails(email)).filter((message) => message.subject === "Reset your password").length;
  const before = await resetMails();
  await on.goto("/forgot-password");
  await on.getByLabel("Email").fill(email);
  await on.getByRole("button", { name: /send reset code/i }).click();
  await expect.poll(() => on.getByRole("status").count()).toBe(1);
  await expect.poll(resetMails).toBe(before + 1);
  await on.goto(await emailedLink(email, "Reset your password", "/reset-password"));
  await on.getByLabel("New password").fill(newPassword);
  await on.getByRole("button", { name: /set new password/i }).click();
  await expect.poll(() => on.getByRole("heading", { name: /passkeys on this account/i }).count()).toBe(1);
}

describe("a password reset ends every way in", () => {
  it("says what it revoked, lists the passkeys, and removes one in one click", async () => {
    const intruder = await consoleUserWithPasskey("Intruder key");
    page = intruder.page;
    const token = await newToken(intruder.page, intruder.user.userId);
    expect(await tokenStatus(token)).toBe(200);
    const otherSession = await signIn(stack.baseUrl, intruder.user.email);
    // The intruder's browser and the API sign-in; the test stack's token and the one made here.
    expect(await holdings(intruder.page, intruder.user.userId)).toEqual({ sessions: 2, tokens: 2 });

    const owner = await signedOutPage();
    page = owner;
    const newPassword = "a fresh passphrase after the break-in";
    await resetThroughThePage(owner, intruder.user.email, newPassword);
    expect(await owner.getByRole("status").textContent()).toBe(
      "Your password is changed. Signed out of 2 sessions; revoked 2 API tokens and 0 MCP grants.",
    );
    expect(await tokenStatus(token)).toBe(401);
    expect(await sessionStatus(otherSession)).toBe(401);
    expect(await sessionStatus(intruder.user.cookie)).toBe(401);
    const list = owner.getByRole("list", { name: /passkeys on this account/i });
    expect(await list.getByRole("listitem").count()).toBe(1);
    expect(await list.textContent()).toMatch(/Intruder key, added /);
    await checkPage(owner, "reset-password-done");

    await owner.getByRole("button", { name: "Remove passkey Intruder key" }).click();
    await expect
      .poll(() => list.getByRole("status").textContent())
      .toBe("Removed: “Intruder key” no longer signs in.");
    expect(await owner.getByRole("button", { name: /remove passkey/i }).count()).toBe(0);
    expect(await passkeysOf(intruder.user.email, newPassword)).toEqual([]);
    expect(
      await owner
        .getByRole("main")
        .getByRole("link", { name: /^sign in$/i })
        .count(),
    ).toBe(1);
    await checkPage(owner, "reset-password-passkey-removed");
  }, 90_000);

  it("says so when the account has no passkey", async () => {
    const { user } = await consoleUser();
    const on = await signedOutPage();
    page = on;
    await resetThroughThePage(on, user.email, "another fresh passphrase here");
    expect(await on.getByText("No passkeys on this account.").count()).toBe(1);
    await checkPage(on, "reset-password-no-passkeys");
  }, 60_000);
});

describe("the reset e-mail's link to remove a passkey", () => {
  it("removes the passkey on the button only; a wrong token is refused", async () => {
    const { user } = await consoleUserWithPasskey("Lost phone");
    const newPassword = "the passphrase after losing a phone";
    const on = await signedOutPage();
    page = on;
    await resetThroughThePage(on, user.email, newPassword);
    const link = await emailedLink(user.email, "Your password was changed", "/remove-passkey");
    const passkeyId = new URL(link, origin).searchParams.get("passkeyId") ?? "";
    expect(passkeyId).not.toBe("");

    // A wrong token: the API's refusal, and the passkey stays.
    const wrong = new URL(link, origin);
    wrong.searchParams.set("token", "not-the-recovery-token");
    await on.goto(`${wrong.pathname}${wrong.search}`);
    await on.getByRole("button", { name: "Remove passkey" }).click();
    await expect.poll(() => on.getByRole("alert").textContent()).toMatch(/invalid or expired link/i);
    await checkPage(on, "remove-passkey-refused");

    await on.goto(link);
    await expect.poll(() => on.getByRole("heading", { level: 1, name: "Remove a passkey" }).count()).toBe(1);
    expect(await on.getByRole("main").textContent()).toContain(passkeyId);
    expect(await on.getByRole("main").textContent()).toContain(user.email);
    await checkPage(on, "remove-passkey");
    // Opening the link changed nothing.
    expect((await passkeysOf(user.email, newPassword)).map((passkey) => passkey.passkeyId)).toEqual([
      passkeyId,
    ]);
    await on.getByRole("button", { name: "Remove passkey" }).click();
    await expect.poll(() => on.getByRole("status").textContent()).toMatch(/^Passkey removed\./);
    expect(await passkeysOf(user.email, newPassword)).toEqual([]);
    expect(
      await on
        .getByRole("main")
        .getByRole("link", { name: /^sign in$/i })
        .count(),
    ).toBe(1);
    await checkPage(on, "remove-passkey-done");
  }, 90_000);
});

describe("a password change in Settings", () => {
  it("signs out another browser and revokes tokens when asked (the default), keeps them when not; a wrong current password is shown at its field", async () => {
    const me = await consoleUser();
    page = me.page;
    const other = await browser.newContext({ baseURL: origin });
    contexts.push(other);
    const [name = "", value = ""] = (await signIn(stack.baseUrl, me.user.email)).split(/=(.*)/s);
    await other.addCookies([{ name, value, url: origin, httpOnly: true, sameSite: "Lax" }]);
    const otherPage = await other.newPage();
    await otherPage.goto("/settings");
    await expect.poll(() => otherPage.getByRole("heading", { level: 1, name: "Settings" }).count()).toBe(1);
    await me.page.goto("/settings");
    const token = await newToken(me.page, me.user.userId);
    // This browser and the other; the test stack's token and the one made here.
    expect(await holdings(me.page, me.user.userId)).toEqual({ sessions: 2, tokens: 2 });

    const form = me.page.getByRole("region", { name: "Change password" });
    await expect.poll(() => form.getByLabel("Sign out everywhere else").isChecked()).toBe(true);
    expect(await descriptionOf(me.page, "Sign out everywhere else")).toMatch(/API tokens and MCP grants/);

    // A wrong current password: the error at "Current password" (it counts toward the lockout).
    await form.getByLabel("Current password").fill("not my password at all");
    await form.getByLabel("New password").fill("a better passphrase than before");
    await form.getByRole("button", { name: "Change password" }).click();
    await expect.poll(() => descriptionOf(me.page, "Current password")).toMatch(/Error: /);
    expect(await form.getByLabel("Current password").getAttribute("aria-invalid")).toBe("true");
    await checkPage(me.page, "settings-change-password-wrong");

    await form.getByLabel("Current password").fill(PASSWORD);
    await form.getByLabel("New password").fill("a better passphrase than before");
    await form.getByRole("button", { name: "Change password" }).click();
    await expect
      .poll(() => form.getByRole("status").textContent())
      .toBe("Password changed. Signed out of 1 other session; revoked 2 API tokens and 0 MCP grants.");
    await checkPage(me.page, "settings-change-password-done");
    expect(await tokenStatus(token)).toBe(401);
    await otherPage.reload();
    await expect.poll(() => new URL(otherPage.url()).pathname).toBe("/sign-in");
    await me.page.reload();
    await expect.poll(() => me.page.getByRole("heading", { name: "Change password" }).count()).toBe(1);
    expect(await me.page.evaluate(async () => (await fetch("/auth/session")).status)).toBe(200);

    // Unchecked: the other browser and the token keep working.
    const again = await signIn(stack.baseUrl, me.user.email, "a better passphrase than before");
    const [againName = "", againValue = ""] = again.split(/=(.*)/s);
    await other.addCookies([
      { name: againName, value: againValue, url: origin, httpOnly: true, sameSite: "Lax" },
    ]);
    const kept = await newToken(me.page, me.user.userId);
    await form.getByLabel("Current password").fill("a better passphrase than before");
    await form.getByLabel("New password").fill("yet another passphrase to remember");
    await form.getByLabel("Sign out everywhere else").uncheck();
    await form.getByRole("button", { name: "Change password" }).click();
    await expect
      .poll(() => form.getByRole("status").textContent())
      .toBe("Password changed. Your other sessions, API tokens and MCP grants keep working.");
    await checkPage(me.page, "settings-change-password-kept");
    expect(await tokenStatus(kept)).toBe(200);
    expect(await sessionStatus(again)).toBe(200);
    await otherPage.goto("/settings");
    await expect.poll(() => otherPage.getByRole("heading", { level: 1, name: "Settings" }).count()).toBe(1);
  }, 90_000);
});

describe("a scheduled account deletion", () => {
  it("signs out everywhere and lands on Sign-in; a password sign-in offers to cancel it, a passkey sign-in asks for the password", async () => {
    const me = await consoleUserWithPasskey("Deletion laptop");
    page = me.page;
    const token = await newToken(me.page, me.user.userId);
    const otherSession = await signIn(stack.baseUrl, me.user.email);

    await me.page.getByRole("button", { name: "Delete account" }).click();
    const dialog = me.page.getByRole("dialog", { name: "Delete your account?" });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await checkPage(me.page, "settings-delete-account-dialog");
    await dialog.getByRole("button", { name: "Schedule the deletion" }).click();
    await expect.poll(() => new URL(me.page.url()).pathname).toBe("/sign-in");
    await expect
      .poll(() => me.page.getByRole("status").textContent())
      .toMatch(/^Your account is scheduled for deletion on .+, and you are signed out everywhere\./);
    expect(await me.page.getByRole("alert").count()).toBe(0);
    await checkPage(me.page, "sign-in-after-deletion");
    expect(await tokenStatus(token)).toBe(401);
    expect(await sessionStatus(otherSession)).toBe(401);
    expect(await me.page.evaluate(async () => (await fetch("/auth/session")).status)).toBe(401);

    // A passkey sign-in: refused, asking for the password.
    await me.page.getByRole("button", { name: /sign in with a passkey/i }).click();
    await expect
      .poll(() => me.page.getByRole("alert").textContent())
      .toMatch(/scheduled for deletion on .+ To cancel the deletion, sign in with your password\./);
    await checkPage(me.page, "sign-in-passkey-deletion-scheduled");

    // The password: the offer; leaving it scheduled signs nobody in.
    await me.page.getByLabel("Email").fill(me.user.email);
    await me.page.getByLabel("Password").fill(PASSWORD);
    await me.page.getByRole("button", { name: /^sign in$/i }).click();
    const offer = me.page.getByRole("region", { name: /your account is scheduled for deletion on/i });
    await expect.poll(() => offer.count()).toBe(1);
    // The passkey's message made way for the offer (its alert is the only one).
    expect(await me.page.getByRole("alert").count()).toBe(1);
    await checkPage(me.page, "sign-in-deletion-offer");
    await offer.getByRole("button", { name: "Keep it scheduled" }).click();
    await expect
      .poll(() => me.page.getByRole("status").textContent())
      .toMatch(/stays scheduled for deletion/);
    expect(await me.page.evaluate(async () => (await fetch("/auth/session")).status)).toBe(401);

    await me.page.getByRole("button", { name: /^sign in$/i }).click();
    await expect.poll(() => offer.count()).toBe(1);
    await offer.getByRole("button", { name: "Cancel the deletion and sign in" }).click();
    await expect
      .poll(() => me.page.getByRole("heading", { level: 1, name: /organisations/i }).count())
      .toBe(1);
    const session = await me.page.evaluate(async () => {
      const answer = await fetch("/auth/session");
      return {
        status: answer.status,
        body: (await answer.json()) as { users: Array<Record<string, unknown>> },
      };
    });
    expect(session.status).toBe(200);
    expect(session.body.users[0]?.userDeletionScheduledAt).toBeUndefined();
  }, 90_000);
});
