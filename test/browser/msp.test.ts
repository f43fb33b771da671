/**
 * The MSP's view in the console (issue 23, part F), in the shared Chromium against the real local
 * stack, with the payment processor on loopback (the real `stripe` package talks to it): an operator
 * creates the MSP (as the MSP e2e tests do, lib's createMsp and setMspRates) and puts a card on
 * file; its owner signs in and finds the switcher; creates a managed client; sets its rates (0.5 is
 * stored and shown as 0.7, and the page says why; a rate under the MSP's own is raised to it); tops
 * up its budget; reads the usage report and downloads its CSV (header and rows checked); renames
 * the client; detach is refused with both of the spec's reasons in words, then accepted; the team's
 * invites are sent, changed and cancelled, a colleague who joined has their role changed; and the
 * switcher opens a managed client's console. Elements are found by role and label only; every page
 * state and dialog is checked with axe and saved as a screenshot.
 */
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { USAGE_CSV_COLUMNS } from "#lib/domain/msp-usage.ts";
import { createMsp, setMspRates } from "#lib/domain/msps.ts";
import { setSystemAdmin } from "#lib/domain/users.ts";
import {
  type PaymentProcessor,
  type PaymentsEnvironment,
  startPaymentsEnvironment,
} from "../support/payment-processor.ts";
import { storedItem, type TestStack, type TestUser } from "../support/stack.ts";
import {
  checkPage,
  connectBrowser,
  describePageOnFailure,
  signedInConsole,
  startConsoleStack,
} from "./support.ts";

let browser: Browser;
let stack: TestStack;
let processor: PaymentProcessor;
let payments: PaymentsEnvironment | undefined;
let context: BrowserContext;
let page: Page;
let owner: TestUser;
let sysadmin: TestUser;
let mspId: string;
let clientId: string;
let otherClientId: string;
const suffix = Math.random().toString(36).slice(2, 8);
const clientName = `Contoso ${suffix}`;
const renamed = `Contoso Renamed ${suffix}`;
const otherName = `Fabrikam ${suffix}`;
const invitee = `invitee-${suffix}@example.com`;
const month = new Date().toISOString().slice(0, 7);

const heading = (name: string | RegExp) => page.getByRole("heading", { level: 1, name });
const shown = (locator: Locator) => expect.poll(() => locator.count()).toBe(1);
const form = (name: string | RegExp) => page.getByRole("form", { name, exact: true });
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const status = (text: RegExp) => page.getByRole("status").filter({ hasText: text });
const alert = (text: RegExp) => page.getByRole("alert").filter({ hasText: text });

beforeAll(async () => {
  payments = await startPaymentsEnvironment({ secretKey: "sk_test_msp_console" });
  processor = payments.processor;
  let origin: string;
  ({ stack, origin } = await startConsoleStack());
  browser = await connectBrowser();
  ({ context, page, user: owner } = await signedInConsole(browser, stack, origin));
  // The operator's part (admin CLI: msps create, msps set-rates) and the MSP's card on file.
  ({
    msp: { mspId },
  } = await createMsp({ name: `Northwind ${suffix}`, ownerUserId: owner.userId }));
  await setMspRates(mspId, { apiSeconds: 0.6, storageGB: 0.8, aiTokens: 0.6, plan: 0.6 });
  const customerId = (await storedItem(keys.mspConfig(mspId)))?.paymentCustomerId as string;
  processor.setDefaultPaymentMethod(customerId, "pm_card_visa");
  sysadmin = await stack.newUser();
  await setSystemAdmin(sysadmin.userId, true);
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await stack?.stop();
  await payments?.stop();
});

describe("the MSP's view in the console", () => {
  describePageOnFailure(() => page);
  it("the switcher leads to the MSP; no clients yet; a managed client is created", async () => {
    await page.goto("/");
    await expect.poll(() => heading(/^organisations$/i).count()).toBe(1);
    // The header settles first (the switcher's client lists, the unread count): a click while it
    // still moves may land beside the button.
    await page.waitForLoadState("networkidle");
    const switcher = form("Switch between the MSP and its clients");
    const select = switcher.getByLabel("Managed service");
    await select.selectOption({ label: "The MSP: its clients, team and usage" });
    await expect.poll(() => select.inputValue()).toBe(`/msps/${mspId}`);
    await switcher.getByRole("button", { name: "Switch" }).click();
    await expect
      .poll(() => new URL(page.url()).pathname, {
        message: "the Switch button goes to the MSP's page",
      })
      .toBe(`/msps/${mspId}`);
    await expect
      .poll(() => heading("Managed clients").count(), {
        message: "the MSP's page shows its heading",
      })
      .toBe(1);
    await shown(page.getByText(/manages no clients yet/i));
    await shown(page.getByRole("link", { name: "Create the first one" }));
    expect(await page.getByRole("navigation", { name: "MSP" }).isVisible()).toBe(true);
    // The MSP's own rates, as the operator set them.
    await shown(
      page
        .getByRole("definition")
        .filter({ hasText: /^0\.6$/ })
        .first(),
    );
    await checkPage(page, "msp-clients-empty");

    // A name the schema refuses (empty) is shown next to the field, before anything is sent.
    const create = form("New managed client");
    await create.getByRole("button", { name: "Create client" }).click();
    await expect.poll(() => create.getByLabel("Client name").getAttribute("aria-invalid")).toBe("true");
    await checkPage(page, "msp-clients-create-error");
    await create.getByLabel("Client name").fill(clientName);
    await create.getByRole("button", { name: "Create client" }).click();
    await expect.poll(() => heading(clientName).count()).toBe(1);
    clientId = decodeURIComponent(new URL(page.url()).pathname.split("/").at(-1) ?? "");
    const listed = await owner.api.get(`/api/msps/${mspId}/clients/${clientId}`);
    expect(listed.status).toBe(200);
    expect(listed.body.clients[0]).toMatchObject({ clientName, billingTo: "msp", mspId });
    await shown(page.getByText(/no members: your team runs it from the msp/i));
    await checkPage(page, "msp-client");
  });

  it("rates: 0.5 is stored and shown as 0.7 with the reason; under the MSP's rate it is raised to it", async () => {
    const rates = form("Rates");
    await rates.getByLabel("API seconds").fill("0.5");
    await rates.getByLabel("Storage (GB)").fill("0.75");
    await rates.getByRole("button", { name: "Save rates" }).click();
    await shown(status(/API seconds: you entered 0\.5; 0\.7 is stored: 0\.5 is below the floor of 0\.7/));
    await shown(
      status(
        /Storage \(GB\): you entered 0\.75; 0\.8 is stored: it is below the MSP's own rate for Storage \(GB\), 0\.8/,
      ),
    );
    await expect.poll(() => rates.getByLabel("API seconds").inputValue()).toBe("0.7");
    await expect.poll(() => rates.getByLabel("Storage (GB)").inputValue()).toBe("0.8");
    const stored = await owner.api.get(`/api/msps/${mspId}/clients/${clientId}/configurations`);
    expect(stored.body.configuration.rates).toMatchObject({ apiSeconds: 0.7, storageGB: 0.8 });
    await checkPage(page, "msp-client-rates-clamped");

    // A limit the API refuses shows next to its field.
    const limits = form("Limits");
    await limits.getByLabel("Requests per minute").fill("20000");
    await limits.getByRole("button", { name: "Save limits" }).click();
    await expect
      .poll(() => limits.getByLabel("Requests per minute").getAttribute("aria-invalid"))
      .toBe("true");
    await limits.getByLabel("Requests per minute").fill("600");
    await limits.getByRole("button", { name: "Save limits" }).click();
    await shown(limits.getByRole("status").filter({ hasText: "Limits saved." }));
    const limited = await owner.api.get(`/api/msps/${mspId}/clients/${clientId}/configurations`);
    expect(limited.body.configuration.limits.requestsPerMinute).toBe(600);
  });

  it("tops up the client's budget after a confirmation naming the charge", async () => {
    const topUp = form("Top up the budget");
    await topUp.getByLabel("Amount (USD)").fill("10");
    await topUp.getByRole("button", { name: "Top up" }).click();
    const dialog = page.getByRole("dialog", { name: "Charge $10.00 to the MSP?" });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await checkPage(page, "msp-client-top-up-dialog");
    await dialog.getByRole("button", { name: "Top up $10.00" }).click();
    await shown(status(/Topped up \$10\.00 \(succeeded\): the budget is now \$10\.00\./));
    expect(processor.paymentIntents).toHaveLength(1);
    const stored = await owner.api.get(`/api/msps/${mspId}/clients/${clientId}/configurations`);
    expect(stored.body.configuration.budget.current).toBe(10);
    await shown(page.getByText(/Current budget: \$10\.00/));
    await checkPage(page, "msp-client-topped-up");
  });

  it("shows the month's usage and downloads it as CSV", async () => {
    const made = await owner.api.post(`/api/msps/${mspId}/clients`, { clientName: otherName });
    expect(made.status).toBe(201);
    otherClientId = made.body.client.clientId;
    await page.getByRole("navigation", { name: "MSP" }).getByRole("link", { name: "Usage" }).click();
    await expect.poll(() => heading("Usage report").count()).toBe(1);
    const table = page.getByRole("table", { name: `Usage in ${month}` });
    await expect.poll(() => table.getByRole("row").count()).toBe(4); // header, two clients, totals
    await shown(table.getByRole("rowheader", { name: clientName }));
    await shown(table.getByRole("rowheader", { name: otherName }));
    // Each amount with the rate it is priced at: the client's (0.7 after the clamp), the MSP's (0.6).
    await shown(table.getByRole("cell", { name: "$0.000 (rate 0.7)", exact: true }));
    await expect
      .poll(() => table.getByRole("cell", { name: "$0.000 (rate 0.6)", exact: true }).count())
      .toBe(2);
    await checkPage(page, "msp-usage");

    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: `Download CSV of ${month}` }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`usage-${month}.csv`);
    const file = join(await mkdtemp(join(tmpdir(), "msp-csv-")), "usage.csv");
    await download.saveAs(file);
    const [header, ...rows] = (await readFile(file, "utf8")).trim().split(/\r?\n/);
    expect(header).toBe(USAGE_CSV_COLUMNS.join(","));
    expect(rows).toHaveLength(2);
    const byClient = new Map(rows.map((row) => [row.split(",")[1], row.split(",")]));
    const contoso = Object.fromEntries(
      USAGE_CSV_COLUMNS.map((column, at) => [column, byClient.get(clientId)?.[at]]),
    );
    expect(contoso).toMatchObject({
      month,
      clientId,
      clientName,
      billingTo: "msp",
      requests: "0",
      apiSeconds: "0.000",
      clientRate: "0.7",
      mspRate: "0.6",
      currency: "usd",
    });
    expect(byClient.get(otherClientId)?.[2]).toBe(otherName);
    await shown(status(new RegExp(`Ready: usage-${month}\\.csv`)));
    await checkPage(page, "msp-usage-downloaded");
  });

  it("renames the client; detach is refused with the reasons in words, then accepted", async () => {
    await page.getByRole("table").getByRole("link", { name: clientName }).click();
    await expect.poll(() => heading(clientName).count()).toBe(1);
    const rename = form("Rename");
    await rename.getByLabel("Client name").fill(renamed);
    await rename.getByRole("button", { name: "Save name" }).click();
    await expect.poll(() => heading(renamed).count()).toBe(1);
    await shown(status(new RegExp(`Renamed to ${renamed}\\.`)));

    const detach = async () => {
      await page.getByRole("button", { name: "Detach client" }).click();
      const dialog = page.getByRole("dialog", { name: `Detach ${renamed}?` });
      await expect.poll(() => dialog.isVisible()).toBe(true);
      return dialog;
    };
    const dialog = await detach();
    await shown(dialog.getByText(/your team loses access to its credentials, targets, proxies and logs/i));
    await checkPage(page, "msp-client-detach-dialog");
    await dialog.getByRole("button", { name: "Detach client" }).click();
    await shown(alert(/Cannot detach client, no independent owner\..*It has no owner of its own yet/));
    await checkPage(page, "msp-client-detach-no-owner");

    // Only a system administrator gives the client an owner of its own.
    const customer = await stack.newUser();
    const assigned = await sysadmin.api.put(
      `/api/msps/${mspId}/clients/${clientId}/members/${customer.userId}`,
      {
        roles: ["owner"],
      },
    );
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(200);
    await (await detach()).getByRole("button", { name: "Detach client" }).click();
    await shown(
      alert(
        /Cannot detach client, billing is charged to the MSP\..*Set “Billed to” to “The client” under Billing/,
      ),
    );
    // The refusal reloads the client: its new owner is listed.
    await shown(
      page
        .getByRole("list", { name: "Members" })
        .getByText(new RegExp(`${literal(customer.email)}\\): Owner$`)),
    );
    await checkPage(page, "msp-client-detach-billed-to-msp");

    const billing = form("Billing");
    await billing.getByLabel("Billed to").selectOption({ label: "The client" });
    await billing.getByRole("button", { name: "Save billing" }).click();
    await shown(billing.getByRole("status").filter({ hasText: "Billing saved." }));
    await shown(page.getByText(/Top-ups are for clients billed to the MSP by Stripe/));
    await (await detach()).getByRole("button", { name: "Detach client" }).click();
    await expect.poll(() => heading("Managed clients").count()).toBe(1);
    await shown(status(new RegExp(`${renamed} was detached`)));
    await shown(page.getByRole("link", { name: otherName, exact: true }));
    expect(await page.getByRole("link", { name: renamed }).count()).toBe(0);
    expect((await owner.api.get(`/api/msps/${mspId}/clients/${clientId}`)).status).toBe(404);
    expect((await customer.api.get(`/api/clients/${clientId}`)).body.clients[0].clientName).toBe(renamed);
    await checkPage(page, "msp-clients-after-detach");
  });

  it("the team: invites sent, changed and cancelled; a colleague's role changed", async () => {
    const colleague = await stack.newUser();
    const invited = await owner.api.post(`/api/msps/${mspId}/invites`, {
      userEmail: colleague.email,
      roles: ["msp_user"],
    });
    expect(invited.status).toBe(201);
    const accepted = await colleague.api.put(
      `/api/users/${colleague.userId}/invites/${invited.body.invites[0].inviteId}`,
      { acceptInvite: true },
    );
    expect(accepted.status).toBe(200);

    await page.getByRole("navigation", { name: "MSP" }).getByRole("link", { name: "Team" }).click();
    await expect.poll(() => heading("Team").count()).toBe(1);
    await shown(page.getByText(/No pending invites\./));
    await shown(page.getByText(new RegExp(`${literal(colleague.email)}\\): User`)));
    await checkPage(page, "msp-team");

    const invite = form("Invite to the MSP");
    await invite.getByLabel("Email").fill(invitee);
    await invite.getByRole("button", { name: "Send invite" }).click();
    await shown(status(new RegExp(`Invite sent to ${invitee}`)));
    const pending = page.getByRole("list", { name: "Pending invites" });
    await shown(pending.getByText(new RegExp(`${literal(invitee)}: User, expires`)));
    // The same address again: the API's 409 next to the form.
    await invite.getByLabel("Email").fill(invitee);
    await invite.getByRole("button", { name: "Send invite" }).click();
    await shown(invite.getByRole("alert").filter({ hasText: /already exists/i }));
    await checkPage(page, "msp-team-invited");

    const row = form(`Invite to ${invitee}`);
    await row.getByLabel(`MSP role for ${invitee}`).selectOption({ label: "Admin" });
    await row.getByRole("button", { name: "Change role and extend" }).click();
    await shown(status(new RegExp(`The invite to ${invitee} is now for Admin and expires`)));
    await shown(pending.getByText(new RegExp(`${literal(invitee)}: Admin, expires`)));
    const stored = await owner.api.get(`/api/msps/${mspId}/invites`);
    expect(stored.body.invites.find((i: { userEmail: string }) => i.userEmail === invitee)?.roles).toEqual([
      "msp_admin",
    ]);

    await page.getByRole("button", { name: `Cancel the invite to ${invitee}` }).click();
    const dialog = page.getByRole("dialog", { name: `Cancel the invite to ${invitee}?` });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await checkPage(page, "msp-team-cancel-dialog");
    await dialog.getByRole("button", { name: "Cancel invite" }).click();
    await shown(status(new RegExp(`The invite to ${invitee} was cancelled`)));
    await shown(page.getByText(/No pending invites\./));

    const role = page.getByRole("combobox", {
      name: new RegExp(`^MSP role of .*${literal(colleague.email)}\\)$`),
    });
    await role.selectOption({ label: "Reader" });
    await page
      .getByRole("form", { name: new RegExp(`^Role of .*${literal(colleague.email)}\\)$`) })
      .getByRole("button", { name: "Change role" })
      .click();
    await shown(status(/is now Reader/));
    const member = await owner.api.get(`/api/msps/${mspId}/members/${colleague.userId}`);
    expect(member.body.members[0].roles).toEqual(["msp_reader"]);
    await checkPage(page, "msp-team-role-changed");
  });

  it("the switcher opens a managed client's console and shows where the page is", async () => {
    const switcher = form("Switch between the MSP and its clients");
    await switcher.getByLabel("Managed service").selectOption({ label: `Client: ${otherName}` });
    await switcher.getByRole("button", { name: "Switch" }).click();
    await expect
      .poll(() => new URL(page.url()).pathname)
      .toBe(`/organisations/${encodeURIComponent(otherClientId)}/proxies`);
    const selected = switcher.getByLabel("Managed service");
    await expect
      .poll(() =>
        selected.evaluate(
          (select) =>
            (select as unknown as { selectedOptions: Array<{ textContent: string }> }).selectedOptions[0]
              ?.textContent,
        ),
      )
      .toBe(`Client: ${otherName}`);
    // The detached client is no longer offered.
    expect(await selected.getByRole("option", { name: `Client: ${renamed}` }).count()).toBe(0);
    await checkPage(page, "msp-switcher-client");
  });

  it("pages the managed clients, 20 at a time", async () => {
    const made = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        owner.api.post(`/api/msps/${mspId}/clients`, { clientName: `Client ${index} ${suffix}` }),
      ),
    );
    expect(made.map((answer) => answer.status)).toEqual(Array(20).fill(201));
    await page.goto(`/msps/${mspId}`);
    await expect.poll(() => heading("Managed clients").count()).toBe(1);
    const clients = page.getByRole("list", { name: "Clients" });
    const pages = page.getByRole("navigation", { name: "Pages of clients" });
    await shown(pages.getByText("Page 1 of 2 (21 in all)"));
    await expect.poll(() => clients.getByRole("listitem").count()).toBe(20);
    expect(await pages.getByRole("button", { name: "Previous page" }).isDisabled()).toBe(true);
    await checkPage(page, "msp-clients-page-1");
    await pages.getByRole("button", { name: "Next page" }).click();
    await shown(pages.getByText("Page 2 of 2 (21 in all)"));
    await expect.poll(() => clients.getByRole("listitem").count()).toBe(1);
    expect(await pages.getByRole("button", { name: "Next page" }).isDisabled()).toBe(true);
  });
});
