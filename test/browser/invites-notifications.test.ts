/**
 * The invite page and the notifications inbox (issue 22) in Chromium against the local stack:
 * - an invitee without an account opens the e-mail's link signed out, is offered sign-up with the
 *   address filled in, verifies, signs in and comes back to the invite, and accepts it;
 * - a second invite is declined after a confirmation dialog;
 * - a user's unread notification shows in the header's count; opening it marks it read.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sentEmails } from "../support/emulator.ts";
import { latestEmailedCode, send, TEST_PASSWORD, withPassword } from "../support/sessions.ts";
import { createClientFor, type TestStack, type TestUser } from "../support/stack.ts";
import { checkPage, connectBrowser, emailedLink, signUpAndVerify, startConsoleStack } from "./support.ts";

let browser: Browser;
let stack: TestStack;
let origin: string;
let owner: TestUser;
let clientId: string;
const inviteeEmail = `invitee-${Date.now()}@accounts.example.test`;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  ({ stack, origin } = await startConsoleStack());
  browser = await connectBrowser();
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Invite Test Org");
});
afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await stack?.stop();
});

async function newPage(): Promise<Page> {
  const context = await browser.newContext({ baseURL: origin });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  return page;
}

async function invite(email: string, role = "reader"): Promise<string> {
  const created = await owner.api.post(`/api/clients/${clientId}/invites`, { email, role });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.invites[0].inviteId as string;
}

describe("the invite page", () => {
  let page: Page;
  let inviteId: string;

  it("offers a signed-out visitor sign-up with the invited address, and brings them back after sign-in", async () => {
    inviteId = await invite(inviteeEmail);
    const link = await emailedLink(
      inviteeEmail,
      "You are invited to join Invite Test Org",
      `/invites/${inviteId}`,
    );
    expect(link).toBe(`/invites/${inviteId}?email=${encodeURIComponent(inviteeEmail)}`);
    page = await newPage();
    await page.goto(link);
    await expect
      .poll(() => page.getByRole("heading", { level: 1, name: /you are invited/i }).count())
      .toBe(1);
    await checkPage(page, "invite-signed-out");
    await page
      .getByRole("link", { name: /^sign up$/i })
      .last()
      .click();
    // The address comes filled in from the invite.
    expect(await page.getByLabel("Email").inputValue()).toBe(inviteeEmail);
    await signUpAndVerify(page, inviteeEmail, "Grace", "Hopper");
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/invites/${inviteId}`);
    await expect.poll(() => page.getByText(/invited to join/i).count()).toBe(1);
    expect(await page.getByRole("main").textContent()).toMatch(/Invite Test Org.*reader/);
    await checkPage(page, "invite");
  });

  it("accepts: the invitee becomes a member with the invite's role", async () => {
    await page.getByRole("button", { name: /^accept$/i }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/organisations/${clientId}`);
    const members = await owner.api.get(`/api/clients/${clientId}/members`);
    expect(members.status).toBe(200);
    expect(
      members.body.members.some(
        (member: { userEmail?: string; roles?: string[] }) =>
          member.userEmail === inviteeEmail && member.roles?.includes("reader"),
      ),
    ).toBe(true);
  });

  it("declines a second invite after a confirmation dialog; the invite is gone", async () => {
    const second = await withPassword(stack, await stack.newUser());
    const declined = await invite(second.email, "admin");
    const other = await newPage();
    await other.goto(`/sign-in?email=${encodeURIComponent(second.email)}&next=/invites/${declined}`);
    await other.getByLabel("Password").fill(TEST_PASSWORD);
    await other.getByRole("button", { name: /^sign in$/i }).click();
    await expect.poll(() => other.getByRole("button", { name: /^decline$/i }).count()).toBe(1);
    await other.getByRole("button", { name: /^decline$/i }).click();
    const dialog = other.getByRole("dialog", { name: /decline this invitation\?/i });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await checkPage(other, "invite-decline-dialog");
    await dialog.getByRole("button", { name: /^decline$/i }).click();
    await expect.poll(() => new URL(other.url()).pathname).toBe("/");
    const pending = await second.api.get(`/api/users/${second.userId}/invites`);
    expect(pending.body.invites).toEqual([]);
    // The link again: the invite is gone, and the page says so.
    await other.goto(`/invites/${declined}`);
    await expect
      .poll(() => other.getByRole("alert").textContent())
      .toMatch(/cancelled, answered or has expired/);
  });
});

describe("notifications", () => {
  it("shows the unread count, and opening a notification marks it read", async () => {
    // A password set with a reset code writes a "Password changed" notification.
    const user = await stack.newUser();
    await send(stack.baseUrl, "POST", "/auth/forgot-password", { body: { email: user.email } });
    const code = await latestEmailedCode(user.email, "Reset your password");
    await send(stack.baseUrl, "POST", "/auth/reset-password", {
      body: { email: user.email, code, password: TEST_PASSWORD },
    });
    expect((await sentEmails(user.email)).length).toBeGreaterThan(0);
    const page = await newPage();
    await page.goto("/sign-in");
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(TEST_PASSWORD);
    await page.getByRole("button", { name: /^sign in$/i }).click();
    const header = page.getByRole("banner");
    await expect.poll(async () => (await header.textContent()) ?? "").toMatch(/\(1 unread\)/);
    await page.getByRole("link", { name: /^notifications$/i }).click();
    const yours = page.getByRole("region", { name: /yours \(1 unread\)/i });
    await expect.poll(() => yours.getByText(/^unread,/i).count()).toBe(1);
    await checkPage(page, "notifications");
    await yours.getByRole("button", { name: /password changed/i }).click();
    await expect
      .poll(() => page.getByRole("region", { name: /notification: password changed/i }).textContent())
      .toMatch(/reset with a code/i);
    await expect.poll(() => page.getByRole("region", { name: /yours \(0 unread\)/i }).count()).toBe(1);
    await expect.poll(async () => (await header.textContent()) ?? "").not.toMatch(/unread/);
    await checkPage(page, "notifications-read");
  });
});
