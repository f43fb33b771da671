/**
 * Signed Stripe webhooks end to end over HTTP (issue 24, docs/billing.md): events signed with the
 * endpoint's secret in Stripe's header format (`stripe.webhooks.generateTestHeaderString`) reach
 * `POST /webhooks/stripe` on the local stack. The completion arrives twice and out of order with
 * the subscription update and the plan changes once; a bad signature changes nothing; a failed
 * invoice suspends the data plane after the grace period (an injected clock) and a paid one
 * restores it; a cancellation takes effect at the period's end.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { billingKeys } from "#lib/db/entities/billing.ts";
import { keys } from "#lib/db/keys.ts";
import { TestClock } from "../support/clock.ts";
import { sentEmails } from "../support/emulator.ts";
import { type PaymentsEnvironment, startPaymentsEnvironment } from "../support/payment-processor.ts";
import {
  callDataPlane,
  createClientFor,
  createProxyOf,
  createProxyParts,
  joinClient,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const SECRET = "whsec_billing_webhooks_e2e_secret";
const REGION = "us-east-1";
const KEY = "billing-webhooks-caller-key-123456";
const DAY_MS = 86_400_000;

const clock = new TestClock();
let stack: TestStack;
let payments: PaymentsEnvironment | undefined;
let target: Server;
let owner: TestUser;
let member: TestUser;
let clientId: string;
let customerId: string;
let proxyUrl: string;
let eventCounter = 0;

const nowSeconds = () => Math.floor(clock.now() / 1000);

function stripeEvent(type: string, created: number, object: Record<string, unknown>) {
  eventCounter += 1;
  return { id: `evt_e2e_${eventCounter}_${Date.now()}`, object: "event", type, created, data: { object } };
}

function subscriptionObject(over: { cancel?: boolean; status?: string; periodStart: number }) {
  return {
    id: "sub_e2e",
    object: "subscription",
    customer: customerId,
    status: over.status ?? "active",
    cancel_at_period_end: over.cancel ?? false,
    billing_cycle_anchor: over.periodStart,
    latest_invoice: "in_e2e_1",
    metadata: {},
    items: {
      data: [
        {
          price: { id: "price_team", lookup_key: "team", metadata: {} },
          current_period_start: over.periodStart,
          current_period_end: over.periodStart + 30 * 86_400,
        },
      ],
    },
  };
}

/** POST the event's JSON with a Stripe-Signature made with `secret` (the endpoint's by default). */
async function deliver(event: Record<string, unknown>, secret = SECRET) {
  const payload = JSON.stringify(event);
  const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret });
  const response = await fetch(`${stack.baseUrl}/webhooks/stripe`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "Stripe-Signature": signature },
    body: payload,
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

const config = async () => (await storedItem(keys.clientConfig(clientId))) as Record<string, any>;

async function billingNotifications() {
  const list = await owner.api.get(`/api/clients/${clientId}/notifications`);
  expect(list.status).toBe(200);
  return (list.body.notifications as { type: string; title: string }[]).filter((n) => n.type === "billing");
}

/** The Core API per-token limit the owner's token gets now (it follows the client's plan). */
async function coreApiLimit() {
  const answer = await owner.api.get(`/api/clients/${clientId}`);
  expect(answer.status).toBe(200);
  return Number(answer.headers.get("x-ratelimit-limit"));
}

const callProxy = () => callDataPlane(`${proxyUrl}/thing`, { headers: { "x-api-key": KEY } });

beforeAll(async () => {
  payments = await startPaymentsEnvironment({ secretKey: "sk_test_billing_webhooks", webhookSecret: SECRET });
  target = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  stack = await startTestStack({ clock: clock.now });
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Billing Co");
  member = await stack.newUser();
  await joinClient(owner, clientId, member, "admin");
  customerId = (await config()).paymentCustomerId;
  expect(customerId).toMatch(/^cus_/);
  const parts = await createProxyParts(owner, clientId, {
    region: REGION,
    key: KEY,
    targetBaseURL: `http://127.0.0.1:${(target.address() as AddressInfo).port}`,
  });
  const proxyId = await createProxyOf(owner, clientId, REGION, parts);
  proxyUrl = `${stack.regions[REGION]}/api/${proxyId}`;
});

afterAll(async () => {
  await stack?.stop();
  await payments?.stop();
  await new Promise<void>((resolve) => (target ? target.close(() => resolve()) : resolve()));
});

describe("POST /webhooks/stripe", () => {
  it("a bad or missing signature is a 400 and changes nothing", async () => {
    const before = await config();
    const started = nowSeconds();
    const completion = stripeEvent("checkout.session.completed", started, {
      id: "cs_forged",
      object: "checkout.session",
      mode: "subscription",
      customer: customerId,
      subscription: "sub_forged",
      metadata: { planTier: "enterprise_custom" },
    });
    const forged = await deliver(completion, "whsec_someone_else");
    expect(forged.status).toBe(400);
    expect(forged.body.message).toMatch(/Invalid Stripe signature/);
    const unsigned = await fetch(`${stack.baseUrl}/webhooks/stripe`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(completion),
    });
    expect(unsigned.status).toBe(400);
    // A body changed after signing fails too.
    const payload = JSON.stringify(completion);
    const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET });
    const tampered = await fetch(`${stack.baseUrl}/webhooks/stripe`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Stripe-Signature": signature },
      body: payload.replace("enterprise_custom", "enterprise_basic"),
    });
    expect(tampered.status).toBe(400);
    expect(await config()).toEqual(before);
    expect(await billingNotifications()).toEqual([]);
    expect(await storedItem(billingKeys.stripeEvent(completion.id))).toBeUndefined();
    expect((await callProxy()).status).toBe(200);
  });

  it("the completion twice and out of order with the subscription update: tier, limits and notification change once", async () => {
    expect(await coreApiLimit()).toBe(100);
    const t = nowSeconds();
    const completion = stripeEvent("checkout.session.completed", t, {
      id: "cs_e2e",
      object: "checkout.session",
      mode: "subscription",
      customer: customerId,
      subscription: "sub_e2e",
      invoice: "in_e2e_1",
      metadata: { planTier: "team" },
    });
    const update = stripeEvent(
      "customer.subscription.updated",
      t + 1,
      subscriptionObject({ periodStart: t }),
    );
    // The update (newer) first, then the completion (older) twice.
    expect((await deliver(update)).body.outcome).toBe("applied");
    expect((await deliver(completion)).body.outcome).toBe("unchanged");
    const again = await deliver(completion);
    expect(again).toEqual({ status: 200, body: { message: "Event already handled", outcome: "duplicate" } });
    expect((await deliver(update)).body.outcome).toBe("duplicate");

    const stored = await config();
    expect(stored).toMatchObject({
      planTier: "team",
      planStatus: "active",
      planExpiresAt: new Date((t + 30 * 86_400) * 1000).toISOString(),
      planStripeInvoiceId: "in_e2e_1",
      planSubscriptionId: "sub_e2e",
      planStateAt: t + 1,
    });
    expect(stored.planRenewedAt).toBeTruthy();
    expect(await billingNotifications()).toMatchObject([{ type: "billing", title: "Plan team active" }]);
    // The owners hear of it by e-mail, once; other members only through the client's inbox.
    expect((await sentEmails(owner.email)).filter((m) => m.subject === "Plan team active")).toHaveLength(1);
    expect((await sentEmails(member.email)).filter((m) => m.subject.startsWith("Plan"))).toEqual([]);
    expect(await coreApiLimit()).toBe(1000);
    // The data plane's runtime item follows (its version moved).
    const runtime = (await storedItem(keys.clientRuntime(clientId), REGION)) as Record<string, any>;
    expect(runtime).toMatchObject({ planTier: "team", planStatus: "active", billingStatus: "active" });
  });

  it("an unknown customer or an unhandled type is answered 200 and ignored", async () => {
    const other = stripeEvent("invoice.paid", nowSeconds(), {
      id: "in_x",
      object: "invoice",
      customer: "cus_nobody",
    });
    expect((await deliver(other)).body.outcome).toBe("ignored");
    const unhandled = stripeEvent("customer.updated", nowSeconds(), { id: customerId, customer: customerId });
    expect((await deliver(unhandled)).body.outcome).toBe("ignored");
    expect(await billingNotifications()).toHaveLength(1);
  });

  it("a failed invoice: payment_failed, then after the grace period 402 on the data plane; a paid invoice restores it", async () => {
    expect((await callProxy()).status).toBe(200); // warm
    clock.advance(60_000);
    const failed = stripeEvent("invoice.payment_failed", nowSeconds(), {
      id: "in_e2e_2",
      object: "invoice",
      customer: customerId,
      subscription: "sub_e2e",
    });
    expect((await deliver(failed)).body.outcome).toBe("applied");
    expect(await config()).toMatchObject({ planStatus: "payment_failed", billingStatus: "active" });
    expect((await config()).planPaymentFailedAt).toBeTruthy();
    // Within the grace period the proxy still serves.
    clock.advance(6 * DAY_MS);
    expect((await callProxy()).status).toBe(200);
    // A retry that fails again does not move the start of the grace period.
    const retry = stripeEvent("invoice.payment_failed", nowSeconds(), {
      id: "in_e2e_2",
      object: "invoice",
      customer: customerId,
      subscription: "sub_e2e",
    });
    expect((await deliver(retry)).body.outcome).toBe("unchanged");
    clock.advance(DAY_MS + 60_000);
    const suspended = await callProxy();
    expect(suspended.status).toBe(402);
    expect(JSON.parse(suspended.text)).toMatchObject({ code: "billing-suspended" });

    const paid = stripeEvent("invoice.paid", nowSeconds(), {
      id: "in_e2e_2",
      object: "invoice",
      customer: customerId,
      subscription: "sub_e2e",
    });
    expect((await deliver(paid)).body.outcome).toBe("applied");
    expect(await config()).toMatchObject({
      planStatus: "active",
      billingStatus: "active",
      planPaymentFailedAt: null,
    });
    expect((await callProxy()).status).toBe(200);
    expect((await billingNotifications()).map((n) => n.title)).toEqual([
      "Payment received: service restored",
      "Payment failed",
      "Plan team active",
    ]);
  });

  it("a cancellation takes effect at the period's end: downgrade_scheduled, then expired with basic limits", async () => {
    const start = (await config()).planPeriodStart as number;
    const cancel = stripeEvent(
      "customer.subscription.updated",
      nowSeconds(),
      subscriptionObject({ periodStart: start, cancel: true }),
    );
    expect((await deliver(cancel)).body.outcome).toBe("applied");
    expect(await config()).toMatchObject({
      planTier: "team",
      planStatus: "downgrade_scheduled",
      planPendingTier: "basic",
      planPendingEffectiveAt: new Date((start + 30 * 86_400) * 1000).toISOString(),
    });
    expect(await coreApiLimit()).toBe(1000);
    // A late update from before the cancellation changes nothing.
    const late = stripeEvent(
      "customer.subscription.updated",
      nowSeconds() - 3600,
      subscriptionObject({ periodStart: start }),
    );
    expect((await deliver(late)).body.outcome).toBe("unchanged");
    expect((await config()).planStatus).toBe("downgrade_scheduled");

    const ended = stripeEvent(
      "customer.subscription.deleted",
      nowSeconds() + 1,
      subscriptionObject({ periodStart: start, cancel: true, status: "canceled" }),
    );
    expect((await deliver(ended)).body.outcome).toBe("applied");
    expect(await config()).toMatchObject({ planStatus: "expired", planPendingTier: null });
    expect(await coreApiLimit()).toBe(100);
    const titles = (await billingNotifications()).map((n) => n.title);
    expect(titles.slice(0, 2)).toEqual(["Plan expired", "Plan cancellation scheduled"]);
    expect(titles).toHaveLength(5);
    const billingMails = (await sentEmails(owner.email)).filter((m) => titles.includes(m.subject));
    expect(billingMails.map((m) => m.subject).sort()).toEqual([...titles].sort());
  });
});
