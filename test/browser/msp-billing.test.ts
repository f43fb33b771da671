/**
 * The MSP's billing page (issue 24) in the shared Chromium against the real local stack, with the
 * payment processor on loopback (the real `stripe` package talks to it) and the processor's webhook
 * signed as Stripe signs it: the msp_owner finds the page in the MSP's navigation, sees that no
 * payment method is on file, and "Add a payment method" sends the browser to the processor's
 * Checkout in setup mode; back with `?setup=success`, once the signed completion has arrived, the
 * page says a payment method is on file and offers to replace it. An msp_user sees the status
 * without the button. Found by role and label only; every state checked with axe and saved as a
 * screenshot.
 */
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { createMsp } from "#lib/domain/msps.ts";
import {
  type PaymentProcessor,
  type PaymentsEnvironment,
  startPaymentsEnvironment,
} from "../support/payment-processor.ts";
import { storedItem, type TestStack, type TestUser } from "../support/stack.ts";
import { checkPage, connectBrowser, signedInConsole, startConsoleStack } from "./support.ts";

const SECRET = "whsec_msp_billing_console";
let browser: Browser;
let stack: TestStack;
let origin: string;
let processor: PaymentProcessor;
let payments: PaymentsEnvironment | undefined;
let owner: { context: BrowserContext; page: Page; user: TestUser };
let mspId: string;
let customerId: string;

beforeAll(async () => {
  payments = await startPaymentsEnvironment({
    secretKey: "sk_test_msp_billing_console",
    webhookSecret: SECRET,
  });
  processor = payments.processor;
  ({ stack, origin } = await startConsoleStack());
  browser = await connectBrowser();
  owner = await signedInConsole(browser, stack, origin);
  ({
    msp: { mspId },
  } = await createMsp({
    name: `Billing MSP ${Math.random().toString(36).slice(2, 8)}`,
    ownerUserId: owner.user.userId,
  }));
  customerId = String((await storedItem(keys.mspConfig(mspId)))?.paymentCustomerId);
  expect(customerId).toMatch(/^cus_/);
});
afterAll(async () => {
  await owner?.context.close();
  await browser?.close();
  await stack?.stop();
  await payments?.stop();
});

const details = (page: Page): Locator => page.getByRole("region", { name: "Payment method" });

/** The processor's signed `checkout.session.completed` for the session, delivered to the webhook. */
async function deliverCompletion(session: Record<string, unknown>) {
  const payload = JSON.stringify({
    id: `evt_msp_console_${Date.now()}`,
    object: "event",
    type: "checkout.session.completed",
    created: Math.floor(Date.now() / 1000),
    data: { object: session },
  });
  const response = await fetch(`${stack.baseUrl}/webhooks/stripe`, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      "Stripe-Signature": Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET }),
    },
    body: payload,
  });
  expect(response.status).toBe(200);
  expect(((await response.json()) as { outcome: string }).outcome).toBe("applied");
}

describe("the MSP's billing page", () => {
  it("an msp_owner adds a payment method through the processor's Checkout; the page then says it is on file", async () => {
    const { page } = owner;
    await page.goto(`/msps/${mspId}`);
    await page.getByRole("navigation", { name: "MSP" }).getByRole("link", { name: "Billing" }).click();
    await expect.poll(() => page.getByRole("heading", { level: 1, name: "Billing" }).count()).toBe(1);
    expect(new URL(page.url()).pathname).toBe(`/msps/${mspId}/billing`);
    await expect
      .poll(async () => (await details(page).textContent()) ?? "")
      .toMatch(/Payment methodNone on file/);
    expect(await details(page).textContent()).toMatch(/Billing statusActive/);
    await checkPage(page, "msp-billing-none");

    await page.getByRole("button", { name: "Add a payment method" }).click();
    await expect.poll(() => page.url()).toMatch(new RegExp(`^${processor.url}/checkout/pay/cs_test_`));
    const sessionId = new URL(page.url()).pathname.split("/").at(-1) ?? "";
    expect(processor.checkoutSessions.get(sessionId)).toMatchObject({
      mode: "setup",
      customer: customerId,
      metadata: { mspId, purpose: "msp_payment_method" },
    });

    // The hosted page collects the card and sends the browser back; the processor's webhook follows.
    const { session, paymentMethodId } = processor.completeCheckout(sessionId);
    await page.goto(`/msps/${mspId}/billing?setup=success`);
    await expect
      .poll(() => page.getByRole("status").first().textContent())
      .toMatch(/submitted to the processor/i);
    await deliverCompletion(session);
    await expect
      .poll(async () => (await details(page).textContent()) ?? "")
      .toMatch(/Payment methodOn file \(added /);
    expect(processor.customers.get(customerId)?.invoice_settings).toEqual({
      default_payment_method: paymentMethodId,
    });
    expect(await page.getByRole("button", { name: "Replace the payment method" }).count()).toBe(1);
    expect(await page.getByRole("button", { name: "Add a payment method" }).count()).toBe(0);
    await checkPage(page, "msp-billing-on-file");
  });

  it("an msp_user sees the status, without the button", async () => {
    const colleague = await signedInConsole(browser, stack, origin);
    try {
      const invite = await owner.user.api.post(`/api/msps/${mspId}/invites`, {
        userEmail: colleague.user.email,
        roles: ["msp_user"],
      });
      expect(invite.status).toBe(201);
      const accepted = await colleague.user.api.put(
        `/api/users/${colleague.user.userId}/invites/${invite.body.invites[0].inviteId}`,
        { acceptInvite: true },
      );
      expect(accepted.status).toBe(200);
      const { page } = colleague;
      await page.goto(`/msps/${mspId}/billing`);
      await expect
        .poll(async () => (await details(page).textContent()) ?? "")
        .toMatch(/Payment methodOn file/);
      await expect
        .poll(() => page.getByText("Only an owner of the MSP can add or replace the payment method.").count())
        .toBe(1);
      expect(await page.getByRole("button", { name: /payment method/i }).count()).toBe(0);
      await checkPage(page, "msp-billing-user");
    } finally {
      await colleague.context.close();
    }
  });
});
