/**
 * The Billing page (issue 24) in Chromium against the real local stack and a loopback payment
 * server speaking Stripe's API: an owner sees the plan, its limit and the invoices, and "Upgrade"
 * sends the browser to the processor's Checkout page; back with `?checkout=success` the pending
 * change is shown. The operator's overrides are listed when there are any. A member with the user
 * role sees the plan without any control. Found by role and
 * label only; every state is checked with axe and saved as a screenshot.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { setClientOverrides } from "#lib/domain/feature-overrides.ts";
import {
  type PaymentProcessor,
  type PaymentsEnvironment,
  startPaymentsEnvironment,
} from "../support/payment-processor.ts";
import { joinClient, storedItem, type TestStack, type TestUser } from "../support/stack.ts";
import { checkPage, connectBrowser, newOrganisation, signedInConsole, startConsoleStack } from "./support.ts";

const PRICES = { STRIPE_PRICE_TEAM: "price_team_monthly", STRIPE_PRICE_ENTERPRISE_BASIC: "price_eb_monthly" };
let processor: PaymentProcessor;
let payments: PaymentsEnvironment | undefined;
let browser: Browser;
let stack: TestStack;
let origin: string;
let owner: { context: BrowserContext; page: Page; user: TestUser };
let clientId: string;

beforeAll(async () => {
  payments = await startPaymentsEnvironment({ secretKey: "sk_test_console_billing", env: { ...PRICES } });
  processor = payments.processor;
  ({ stack, origin } = await startConsoleStack());
  browser = await connectBrowser();
  owner = await signedInConsole(browser, stack, origin);
  clientId = await newOrganisation(owner.user, "Billing Co");
  const customerId = String((await storedItem(keys.clientConfig(clientId)))?.paymentCustomerId);
  expect(customerId).toMatch(/^cus_/);
  processor.addInvoice(customerId);
});
afterAll(async () => {
  await owner?.context.close();
  await browser?.close();
  await stack?.stop();
  await payments?.stop();
});

const details = (page: Page) => page.getByRole("region", { name: "Plan", exact: true });

describe("the Billing page", () => {
  it("shows an owner the plan, its limit and the invoices, with the controls", async () => {
    const { page } = owner;
    await page.goto(`/organisations/${clientId}`);
    await page
      .getByRole("navigation", { name: "Organisation" })
      .getByRole("link", { name: "Billing" })
      .click();
    await expect.poll(() => page.getByRole("heading", { level: 1, name: "Billing" }).count()).toBe(1);
    await expect.poll(async () => (await details(page).textContent()) ?? "").toMatch(/PlanBasic/);
    expect(await details(page).textContent()).toMatch(/100 per API token and per proxy credential/);
    expect(await page.getByLabel("Upgrade to").locator("option").allTextContents()).toEqual([
      "Team",
      "Enterprise basic",
    ]);
    const invoices = page.getByRole("table", { name: /invoices/i });
    await expect.poll(() => invoices.getByRole("row").count()).toBe(2);
    await checkPage(page, "billing-owner");
  });

  it("Upgrade sends the browser to the processor's Checkout; back, the pending change is shown", async () => {
    const { page } = owner;
    await page.getByLabel("Upgrade to").selectOption("team");
    await page.getByRole("button", { name: "Upgrade" }).click();
    await expect.poll(() => page.url()).toMatch(new RegExp(`^${processor.url}/checkout/pay/cs_test_`));
    const [session] = [...processor.checkoutSessions.values()];
    expect(session).toMatchObject({
      mode: "subscription",
      line_items: [{ price: PRICES.STRIPE_PRICE_TEAM }],
    });

    await page.goto(`/organisations/${clientId}/billing?checkout=success`);
    await expect.poll(() => page.getByRole("status").first().textContent()).toMatch(/payment submitted/i);
    await expect
      .poll(async () => (await details(page).textContent()) ?? "")
      .toMatch(/Pending changeTo Team once the payment is confirmed/);
    expect(await details(page).textContent()).toMatch(/Upgrade requested/);
    await checkPage(page, "billing-upgrade-requested");
  });

  it("lists the operator's feature and promo overrides, only when there are any", async () => {
    const { page } = owner;
    await page.goto(`/organisations/${clientId}/billing`);
    await expect.poll(async () => (await details(page).textContent()) ?? "").toMatch(/PlanBasic/);
    const overrides = page.getByRole("region", { name: "Overrides" });
    expect(await overrides.count()).toBe(0);

    await setClientOverrides(clientId, {
      featureOverrides: ["core_api_rate_limit_x10"],
      promoOverrides: ["extended_trial"],
    });
    await page.reload();
    await expect.poll(() => overrides.count()).toBe(1);
    const items = await overrides.getByRole("listitem").allTextContents();
    expect(items).toHaveLength(2);
    expect(items[0]).toMatch(
      /^core_api_rate_limit_x10: ten times the plan's requests per minute per API token/,
    );
    expect(items[1]).toMatch(/^extended_trial: an extended trial/);
    await checkPage(page, "billing-overrides");
    await setClientOverrides(clientId, { featureOverrides: [], promoOverrides: [] });
  });

  it("shows a member with the user role the plan, without any control", async () => {
    const member = await signedInConsole(browser, stack, origin);
    try {
      await joinClient(owner.user, clientId, member.user, "user");
      await member.page.goto(`/organisations/${clientId}/billing`);
      await expect
        .poll(() => member.page.getByText(/only an owner of the organisation can change the plan/i).count())
        .toBe(1);
      expect(await details(member.page).textContent()).toMatch(/PlanBasic/);
      expect(await member.page.getByRole("button", { name: "Upgrade" }).count()).toBe(0);
      expect(await member.page.getByRole("button", { name: /billing portal/i }).count()).toBe(0);
      expect(await member.page.getByRole("table", { name: /invoices/i }).count()).toBe(0);
      await checkPage(member.page, "billing-member");
    } finally {
      await member.context.close();
    }
  });
});
