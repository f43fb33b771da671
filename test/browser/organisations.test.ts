/**
 * Organisations, members and invites in the console (issue 22), in the shared Chromium against the
 * real local stack: create an organisation, rename it, invite an address (pending, resent,
 * cancelled), a second user accepts an invite through the API, their role changes, the last admin
 * keeps the admin role (the API's message next to the control), they are removed, leaving as the
 * last admin is refused, and the organisation is deleted at once. Elements are found by role and
 * label only; every page state and dialog is checked with axe and saved as a screenshot.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sentEmails } from "../support/emulator.ts";
import { signedInUser, TEST_PASSWORD, withPassword } from "../support/sessions.ts";
import type { TestStack, TestUser } from "../support/stack.ts";
import { checkPage, connectBrowser, describePageOnFailure, startConsoleStack } from "./support.ts";

let browser: Browser;
let stack: TestStack;
let context: BrowserContext;
let page: Page;
describePageOnFailure(() => page);
let user: TestUser;
let colleague: TestUser;
let clientId: string;
let origin: string;
const suffix = Math.random().toString(36).slice(2, 8);
const firstName = `Acme ${suffix}`;
const renamed = `Acme Renamed ${suffix}`;
const outsider = `outsider-${suffix}@example.com`;

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const heading = (name: string | RegExp) => page.getByRole("heading", { level: 1, name });
const shown = (locator: ReturnType<Page["getByText"]>) => expect.poll(() => locator.count()).toBe(1);

beforeAll(async () => {
  ({ stack, origin } = await startConsoleStack());
  user = await withPassword(stack, await stack.newUser());
  colleague = await stack.newUser();
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

describe("organisations in the console", () => {
  it("shows the empty state, then creates an organisation", async () => {
    await page.goto("/sign-in");
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(TEST_PASSWORD);
    await page.getByRole("button", { name: /^sign in$/i }).click();
    await expect.poll(() => heading(/^organisations$/i).count()).toBe(1);
    await shown(page.getByText(/not a member of any organisation yet\. create one/i));
    await checkPage(page, "organisations-empty");

    await page.getByRole("button", { name: /^new organisation$/i }).click();
    // A name the API refuses is shown next to the field.
    await page.getByRole("button", { name: /^create$/i }).click();
    await expect.poll(() => page.getByLabel("Organisation name").getAttribute("aria-invalid")).toBe("true");
    await checkPage(page, "organisations-create-error");
    await page.getByLabel("Organisation name").fill(firstName);
    await page.getByRole("button", { name: /^create$/i }).click();
    await expect.poll(() => heading(firstName).count()).toBe(1);
    clientId = decodeURIComponent(new URL(page.url()).pathname.split("/").at(-1) ?? "");
    const listed = await user.api.get(`/api/clients/${clientId}`);
    expect(listed.status).toBe(200);
    expect(listed.body.clients[0].clientName).toBe(firstName);
    expect(await page.getByRole("navigation", { name: "Organisation" }).isVisible()).toBe(true);
    await shown(page.getByText(/no pending invites/i));
    await checkPage(page, "organisation");
  });

  it("renames it; the list links to it by its new name", async () => {
    await page.getByLabel("Organisation name").fill(renamed);
    await page.getByRole("button", { name: /^save$/i }).click();
    await expect.poll(() => heading(renamed).count()).toBe(1);
    await shown(page.getByText("Organisation renamed."));
    expect((await user.api.get(`/api/clients/${clientId}`)).body.clients[0].clientName).toBe(renamed);

    await page.getByRole("link", { name: /^organisations$/i }).click();
    await expect.poll(() => heading(/^organisations$/i).count()).toBe(1);
    const list = page.getByRole("list", { name: /your organisations/i });
    await expect.poll(() => list.getByRole("link", { name: renamed }).count()).toBe(1);
    await checkPage(page, "organisations-list");
    await list.getByRole("link", { name: renamed }).click();
    await expect.poll(() => heading(renamed).count()).toBe(1);
  });

  it("invites an address: pending, resent, then cancelled after a confirmation", async () => {
    const invite = page.getByRole("form", { name: /invite member/i });
    await invite.getByLabel("Email").fill("not an address");
    await invite.getByRole("button", { name: /send invite/i }).click();
    await expect.poll(() => invite.getByLabel("Email").getAttribute("aria-invalid")).toBe("true");
    await invite.getByLabel("Email").fill(outsider);
    await invite.getByLabel("Role").selectOption("reader");
    await invite.getByRole("button", { name: /send invite/i }).click();
    await shown(page.getByText(`Invite sent to ${outsider}.`));
    const pending = page.getByRole("list", { name: /pending invites/i });
    await expect.poll(async () => (await pending.textContent()) ?? "").toContain(`${outsider}: Reader`);
    const invited = () => sentEmails(outsider).then((messages) => messages.length);
    expect(await invited()).toBe(1);
    await checkPage(page, "organisation-invite-pending");

    await page
      .getByRole("button", { name: new RegExp(`resend the invite to ${literal(outsider)}`, "i") })
      .click();
    await shown(page.getByText(`The invite to ${outsider} was sent again.`));
    await expect.poll(invited).toBe(2);

    await page
      .getByRole("button", { name: new RegExp(`cancel the invite to ${literal(outsider)}`, "i") })
      .click();
    const dialog = page.getByRole("dialog", { name: /cancel the invite/i });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await checkPage(page, "organisation-invite-cancel-dialog");
    await dialog.getByRole("button", { name: /^cancel invite$/i }).click();
    await shown(page.getByText(`The invite to ${outsider} was cancelled.`));
    await shown(page.getByText(/no pending invites/i));
    const invites = await user.api.get(`/api/clients/${clientId}/invites`);
    expect(invites.body.invites).toEqual([]);
  });

  it("adds a colleague who accepts, changes their role, keeps the last admin, removes them", async () => {
    const invite = page.getByRole("form", { name: /invite member/i });
    await invite.getByLabel("Email").fill(colleague.email);
    await invite.getByLabel("Role").selectOption("user");
    await invite.getByRole("button", { name: /send invite/i }).click();
    await shown(page.getByText(`Invite sent to ${colleague.email}.`));
    const mine = await colleague.api.get(`/api/users/${colleague.userId}/invites`);
    const inviteId = mine.body.invites.find(
      (item: { parentId: string }) => item.parentId === clientId,
    ).inviteId;
    const accepted = await colleague.api.put(`/api/users/${colleague.userId}/invites/${inviteId}`, {
      acceptInvite: true,
    });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    await page.reload();

    const theirs = page.getByRole("form", { name: new RegExp(`role of .*${literal(colleague.email)}`, "i") });
    await expect.poll(() => theirs.count()).toBe(1);
    const members = page.getByRole("list", { name: /^members$/i });
    await expect.poll(async () => (await members.textContent()) ?? "").toContain(`${colleague.email}): User`);
    await theirs.getByLabel(/role of/i).selectOption("devops");
    await theirs.getByRole("button", { name: /change role/i }).click();
    await expect
      .poll(async () => (await members.textContent()) ?? "")
      .toContain(`${colleague.email}): DevOps`);
    expect(
      (await user.api.get(`/api/clients/${clientId}/members/${colleague.userId}`)).body.members[0].roles,
    ).toEqual(["devops"]);
    await checkPage(page, "organisation-members");

    // The caller is the only admin: giving up the role keeps it, and the API says why, next to it.
    const own = page.getByRole("form", { name: new RegExp(`role of .*${literal(user.email)}`, "i") });
    await own.getByLabel(/role of/i).selectOption("devops");
    await own.getByRole("button", { name: /change role/i }).click();
    const row = members.getByRole("listitem").filter({ has: own });
    await expect
      .poll(async () => (await row.getByRole("status").textContent()) ?? "")
      .toMatch(/retains the admin role as the last remaining admin/i);
    expect(await own.getByLabel(/role of/i).inputValue()).toBe("owner");
    expect(
      (await user.api.get(`/api/clients/${clientId}/members/${user.userId}`)).body.members[0].roles,
    ).toEqual(["owner", "admin", "devops"]); // both kept (owner, last admin); devops added
    await checkPage(page, "organisation-last-admin");

    await page.getByRole("button", { name: new RegExp(`remove .*${literal(colleague.email)}`, "i") }).click();
    const dialog = page.getByRole("dialog", { name: /^remove /i });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    expect(await dialog.textContent()).toMatch(/lose their roles/);
    await checkPage(page, "organisation-member-remove-dialog");
    await dialog.getByRole("button", { name: /^remove member$/i }).click();
    await expect.poll(() => theirs.count()).toBe(0);
    expect((await user.api.get(`/api/clients/${clientId}/members/${colleague.userId}`)).status).toBe(404);
  });

  it("refuses to let the last admin leave, with the API's message next to the button", async () => {
    await page.getByRole("button", { name: /^leave organisation$/i }).click();
    const dialog = page.getByRole("dialog", { name: /^leave /i });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await checkPage(page, "organisation-leave-dialog");
    await dialog.getByRole("button", { name: /^leave organisation$/i }).click();
    await shown(page.getByText(/cannot delete member, last remaining admin/i));
    expect(await heading(renamed).count()).toBe(1);
  });

  it("deletes the organisation at once after a dialog stating the rules", async () => {
    await page.getByRole("button", { name: /^delete organisation$/i }).click();
    const dialog = page.getByRole("dialog", { name: /^delete /i });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    const text = (await dialog.textContent()) ?? "";
    expect(text).toMatch(/sole remaining administrator/);
    expect(text).toMatch(/marked for deletion/);
    expect(text).toMatch(/deleted at once/);
    expect(text).toMatch(/credentials, targets, proxies, rules and request history/);
    await checkPage(page, "organisation-delete-dialog");
    await dialog.getByLabel(/delete everything now/i).check();
    await dialog.getByRole("button", { name: /^delete now$/i }).click();
    await expect.poll(() => heading(/^organisations$/i).count()).toBe(1);
    await shown(page.getByText(/not a member of any organisation yet/i));
    expect((await user.api.get(`/api/clients/${clientId}`)).status).toBe(404);
  });

  it("marks an organisation for deletion by default: it says so and stays listed until purged", async () => {
    const name = `Old ${suffix}`;
    await page.getByRole("button", { name: /^new organisation$/i }).click();
    await page.getByLabel("Organisation name").fill(name);
    await page.getByRole("button", { name: /^create$/i }).click();
    await expect.poll(() => heading(name).count()).toBe(1);
    const id = decodeURIComponent(new URL(page.url()).pathname.split("/").at(-1) ?? "");
    await page.getByRole("button", { name: /^delete organisation$/i }).click();
    const dialog = page.getByRole("dialog", { name: /^delete /i });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    expect(await dialog.getByLabel(/delete everything now/i).isChecked()).toBe(false);
    await dialog.getByRole("button", { name: /^mark for deletion$/i }).click();
    await shown(page.getByText(/^marked for deletion: its proxies no longer serve/i));
    expect(await page.getByRole("button", { name: /^delete organisation$/i }).count()).toBe(0);
    await shown(page.getByText(/marked for deletion takes no new members/i));
    expect(await page.getByRole("form", { name: /invite member/i }).count()).toBe(0);
    const client = (await user.api.get(`/api/clients/${id}`)).body.clients[0];
    expect(client.clientStatus).toBe("pendingDeletion");
    expect(client.clientDeletionScheduledAt).toEqual(expect.any(String));
    await checkPage(page, "organisation-marked-for-deletion");
    await page.getByRole("link", { name: /^organisations$/i }).click();
    const list = page.getByRole("list", { name: /your organisations/i });
    await expect
      .poll(async () => (await list.textContent()) ?? "")
      .toContain(`${name} (marked for deletion)`);
  });

  it("a member without the admin role sees the members only, and leaves", async () => {
    const created = await user.api.post("/api/clients", { clientName: `Shared ${suffix}` });
    expect(created.status).toBe(201);
    const sharedId: string = created.body.clients[0].clientId;
    const member = await signedInUser(stack);
    const invited = await user.api.post(`/api/clients/${sharedId}/invites`, {
      email: member.email,
      role: "user",
    });
    expect(invited.status).toBe(201);
    const accepted = await member.api.put(
      `/api/users/${member.userId}/invites/${invited.body.invites[0].inviteId}`,
      {
        acceptInvite: true,
      },
    );
    expect(accepted.status).toBe(200);
    const [name, value] = member.cookie.split("=", 2) as [string, string];
    const theirs = await browser.newContext({ baseURL: origin });
    try {
      await theirs.addCookies([{ name, value, url: origin }]);
      const their = await theirs.newPage();
      their.setDefaultTimeout(10_000);
      await their.goto(`/organisations/${encodeURIComponent(sharedId)}`);
      await expect
        .poll(() => their.getByRole("heading", { level: 1, name: `Shared ${suffix}` }).count())
        .toBe(1);
      const members = their.getByRole("list", { name: /^members$/i });
      await expect
        .poll(async () => (await members.textContent()) ?? "")
        .toContain(`${member.email}) (you): User`);
      // No role changes, invites, rename or delete for a member without the admin role.
      expect(await their.getByRole("combobox").count()).toBe(0);
      expect(await their.getByRole("form", { name: /invite member/i }).count()).toBe(0);
      expect(await their.getByLabel("Organisation name").count()).toBe(0);
      expect(await their.getByRole("button", { name: /^delete organisation$/i }).count()).toBe(0);
      await checkPage(their, "organisation-as-member");
      await their.getByRole("button", { name: /^leave organisation$/i }).click();
      const dialog = their.getByRole("dialog", { name: /^leave /i });
      await expect.poll(() => dialog.isVisible()).toBe(true);
      await dialog.getByRole("button", { name: /^leave organisation$/i }).click();
      await expect
        .poll(() => their.getByRole("heading", { level: 1, name: /^organisations$/i }).count())
        .toBe(1);
      await expect.poll(() => their.getByText(/not a member of any organisation yet/i).count()).toBe(1);
      expect((await user.api.get(`/api/clients/${sharedId}/members/${member.userId}`)).status).toBe(404);
    } finally {
      await theirs.close();
    }
  });
});
