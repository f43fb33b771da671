/**
 * The rest of issue 24's billing life end to end, over HTTP against the local stack with the
 * payment processor on loopback (the real `stripe` package talks to it) and signed webhooks
 * (`stripe.webhooks.generateTestHeaderString`, the endpoint's secret): an MSP's payment method
 * through Checkout in setup mode (and rule 4 of spec 4.14 reading it), an upgrade from a paid tier
 * that cancels the subscription it replaces (once), the data plane's per-credential limit following
 * the tier within the same minute, and a downgrade to a lower paid tier at the period's end.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { billingKeys } from "#lib/db/entities/billing.ts";
import { keys } from "#lib/db/keys.ts";
import { createMsp } from "#lib/domain/msps.ts";
import { TestClock } from "../support/clock.ts";
import {
  type PaymentProcessor,
  type PaymentsEnvironment,
  startPaymentsEnvironment,
} from "../support/payment-processor.ts";
import {
  callDataPlane,
  createClientFor,
  createProxyOf,
  createProxyParts,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const SECRET = "whsec_billing_lifecycle_e2e";
const REGION = "us-east-1";
const PRICES = {
  STRIPE_PRICE_TEAM: "price_team_lifecycle",
  STRIPE_PRICE_ENTERPRISE_BASIC: "price_enterprise_basic_lifecycle",
} as const;
/** The tier each price is for, as the price's `lookup_key` names it at the processor. */
const LOOKUP_KEYS: Record<string, string> = {
  [PRICES.STRIPE_PRICE_TEAM]: "team",
  [PRICES.STRIPE_PRICE_ENTERPRISE_BASIC]: "enterprise_basic",
};

const clock = new TestClock();
let stack: TestStack;
let processor: PaymentProcessor;
let payments: PaymentsEnvironment | undefined;
let target: Server;
let eventCounter = 0;

beforeAll(async () => {
  payments = await startPaymentsEnvironment({
    secretKey: "sk_test_billing_lifecycle",
    webhookSecret: SECRET,
    env: { ...PRICES },
  });
  processor = payments.processor;
  target = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  stack = await startTestStack({ clock: clock.now });
});

afterAll(async () => {
  await stack?.stop();
  await payments?.stop();
  await new Promise<void>((resolve) => (target ? target.close(() => resolve()) : resolve()));
});

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A Stripe event around a copy of `object` (as Stripe sends the object's state when it happened). */
function stripeEvent(type: string, object: Record<string, unknown>, created = nowSeconds()) {
  eventCounter += 1;
  return {
    id: `evt_lifecycle_${eventCounter}_${Date.now()}`,
    object: "event",
    type,
    created,
    data: { object: structuredClone(object) },
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

/** The subscription as the processor holds it, its prices with their lookup keys (as Stripe shows them). */
function subscriptionAsSent(subscriptionId: string) {
  const subscription = structuredClone(processor.subscriptions.get(subscriptionId)) as Record<string, any>;
  if (!subscription) throw new Error(`no subscription ${subscriptionId}`);
  for (const item of subscription.items.data) item.price.lookup_key = LOOKUP_KEYS[item.price.id] ?? null;
  return subscription;
}

const requestsTo = (method: string, path: string) =>
  processor.requests.filter((request) => request.method === method && request.path === path);

interface Organisation {
  owner: TestUser;
  clientId: string;
  customerId: string;
}

async function newOrganisation(name: string): Promise<Organisation> {
  const owner = await stack.newUser();
  const clientId = await createClientFor(owner, name);
  const customerId = String((await storedItem(keys.clientConfig(clientId)))?.paymentCustomerId);
  expect(customerId).toMatch(/^cus_/);
  return { owner, clientId, customerId };
}

const clientConfig = async (clientId: string) =>
  (await storedItem(keys.clientConfig(clientId))) as Record<string, any>;

async function billingTitles(org: Organisation) {
  const list = await org.owner.api.get(`/api/clients/${org.clientId}/notifications`);
  expect(list.status).toBe(200);
  return (list.body.notifications as { type: string; title: string }[])
    .filter((n) => n.type === "billing")
    .map((n) => n.title);
}

/**
 * An owner buys `tier` through Checkout, the hosted page completes it, and the processor's signed
 * `checkout.session.completed` arrives: the completion event and the subscription it made.
 */
async function buy(org: Organisation, tier: "team" | "enterprise_basic") {
  const started = await org.owner.api.post(`/api/clients/${org.clientId}/billing/checkout`, {
    planTier: tier,
  });
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  const { session, subscription } = processor.completeCheckout(started.body.checkoutSessionId);
  if (!subscription) throw new Error("the Checkout made no subscription");
  const completion = stripeEvent("checkout.session.completed", session);
  const delivered = await deliver(completion);
  expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
  expect(delivered.body.outcome).toBe("applied");
  return { completion, subscriptionId: subscription.id };
}

describe("an MSP's payment method through Checkout in setup mode", () => {
  let mspOwner: TestUser;
  let mspId: string;
  let mspCustomerId: string;
  let clientId: string;
  const mspConfiguration = async () => {
    const answer = await mspOwner.api.get(`/api/msps/${mspId}/configurations`);
    expect(answer.status).toBe(200);
    return answer.body.configuration as Record<string, unknown>;
  };
  const billTo = (billingTo: "client" | "msp") =>
    mspOwner.api.put(`/api/msps/${mspId}/clients/${clientId}/configurations`, { billingTo });
  const defaultMethod = () =>
    (
      processor.customers.get(mspCustomerId)?.invoice_settings as
        | { default_payment_method: unknown }
        | undefined
    )?.default_payment_method;
  /** The msp_owner starts the setup and the hosted page collects a card: the completion event. */
  async function setUp() {
    const started = await mspOwner.api.post(`/api/msps/${mspId}/billing/payment-method`);
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const { session, paymentMethodId } = processor.completeCheckout(started.body.checkoutSessionId);
    expect(session.setup_intent).toMatch(/^seti_/);
    return { completion: stripeEvent("checkout.session.completed", session), paymentMethodId };
  }

  beforeAll(async () => {
    mspOwner = await stack.newUser();
    ({
      msp: { mspId },
    } = await createMsp({ name: "Initech Managed", ownerUserId: mspOwner.userId }));
    mspCustomerId = String((await storedItem(keys.mspConfig(mspId)))?.paymentCustomerId);
    expect(mspCustomerId).toMatch(/^cus_/);
    const created = await mspOwner.api.post(`/api/msps/${mspId}/clients`, { clientName: "Managed Co" });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    clientId = created.body.client.clientId;
    expect((await billTo("client")).status).toBe(200);
  });

  it("without a payment method the MSP's configuration says so and rule 4 refuses billing to the MSP", async () => {
    expect(await mspConfiguration()).toMatchObject({
      billingStatus: "active",
      paymentMethodOnFile: false,
      paymentMethodUpdated: null,
    });
    const refused = await billTo("msp");
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe("Cannot bill to MSP: no payment method on file");
  });

  it("a bad signature changes nothing; the signed completion sets the default and records it, once", async () => {
    const { completion, paymentMethodId } = await setUp();
    const forged = await deliver(completion, "whsec_not_the_endpoints");
    expect(forged.status).toBe(400);
    expect(defaultMethod()).toBeNull();
    expect((await mspConfiguration()).paymentMethodOnFile).toBe(false);
    expect(await storedItem(billingKeys.stripeEvent(completion.id))).toBeUndefined();

    const customerUpdates = () => requestsTo("POST", `/v1/customers/${mspCustomerId}`).length;
    const updatesBefore = customerUpdates();
    const applied = await deliver(completion);
    expect(applied).toEqual({ status: 200, body: { message: "Event applied", outcome: "applied" } });
    // The SetupIntent was read for its payment method, which became the customer's default.
    expect(requestsTo("GET", `/v1/setup_intents/${completion.data.object.setup_intent}`)).toHaveLength(1);
    const update = requestsTo("POST", `/v1/customers/${mspCustomerId}`).at(-1);
    expect(update?.form.get("invoice_settings[default_payment_method]")).toBe(paymentMethodId);
    expect(defaultMethod()).toBe(paymentMethodId);
    const configuration = await mspConfiguration();
    expect(configuration).toMatchObject({ billingStatus: "active", paymentMethodOnFile: true });
    expect(Date.parse(String(configuration.paymentMethodUpdated))).not.toBeNaN();
    expect(await storedItem(billingKeys.stripeEvent(completion.id))).toMatchObject({ mspId });

    // Delivered again: nothing more at the processor or here.
    const again = await deliver(completion);
    expect(again.body.outcome).toBe("duplicate");
    expect(customerUpdates()).toBe(updatesBefore + 1);
    expect((await mspConfiguration()).paymentMethodUpdated).toBe(configuration.paymentMethodUpdated);
  });

  it("rule 4 reads what the webhook recorded: billing to the MSP is accepted without asking the processor", async () => {
    const retrievals = () => requestsTo("GET", `/v1/customers/${mspCustomerId}`).length;
    const before = retrievals();
    const accepted = await billTo("msp");
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body.configuration.billingTo).toBe("msp");
    expect(retrievals()).toBe(before);
  });

  it("a replacement becomes the default; a late completion of the older setup does not bring it back", async () => {
    const first = await setUp();
    const second = await setUp();
    // Stripe sends each completion when it happens: the second one is newer.
    second.completion.created = first.completion.created + 5;
    expect((await deliver(second.completion)).body.outcome).toBe("applied");
    expect(defaultMethod()).toBe(second.paymentMethodId);
    const updates = requestsTo("POST", `/v1/customers/${mspCustomerId}`).length;
    expect((await deliver(first.completion)).body.outcome).toBe("unchanged");
    expect(defaultMethod()).toBe(second.paymentMethodId);
    expect(requestsTo("POST", `/v1/customers/${mspCustomerId}`)).toHaveLength(updates);
    expect((await mspConfiguration()).paymentMethodOnFile).toBe(true);
  });
});

describe("an upgrade from a paid tier", () => {
  it("cancels the replaced subscription once (prorated), and that subscription's late deletion expires nothing", async () => {
    const org = await newOrganisation("Upgrade Co");
    const team = await buy(org, "team");
    expect(await clientConfig(org.clientId)).toMatchObject({
      planTier: "team",
      planStatus: "active",
      planSubscriptionId: team.subscriptionId,
    });
    // The first subscription replaced nothing.
    expect(processor.requests.filter((request) => request.method === "DELETE")).toHaveLength(0);

    const enterprise = await buy(org, "enterprise_basic");
    expect(await clientConfig(org.clientId)).toMatchObject({
      planTier: "enterprise_basic",
      planStatus: "active",
      planSubscriptionId: enterprise.subscriptionId,
    });
    const cancels = () => requestsTo("DELETE", `/v1/subscriptions/${team.subscriptionId}`);
    expect(cancels()).toHaveLength(1);
    expect(cancels()[0]?.query.get("prorate")).toBe("true");
    expect(cancels()[0]?.query.get("invoice_now")).toBe("true");
    expect(processor.subscriptions.get(team.subscriptionId)?.status).toBe("canceled");
    expect(processor.subscriptions.get(enterprise.subscriptionId)?.status).toBe("active");

    // The completion delivered again: nothing is cancelled twice, nothing changes.
    const titles = await billingTitles(org);
    expect((await deliver(enterprise.completion)).body.outcome).toBe("duplicate");
    expect(cancels()).toHaveLength(1);
    expect(requestsTo("DELETE", `/v1/subscriptions/${enterprise.subscriptionId}`)).toHaveLength(0);

    // Stripe then reports the old subscription deleted (later than everything): not the plan's.
    const deleted = stripeEvent(
      "customer.subscription.deleted",
      subscriptionAsSent(team.subscriptionId),
      nowSeconds() + 60,
    );
    expect((await deliver(deleted)).body.outcome).toBe("unchanged");
    // Nor does the final (credit) invoice of the old subscription touch the plan.
    const finalInvoice = stripeEvent(
      "invoice.payment_failed",
      {
        id: "in_final_of_replaced",
        object: "invoice",
        customer: org.customerId,
        parent: { subscription_details: { subscription: team.subscriptionId } },
      },
      nowSeconds() + 61,
    );
    expect((await deliver(finalInvoice)).body.outcome).toBe("unchanged");
    const after = await clientConfig(org.clientId);
    expect(after).toMatchObject({
      planTier: "enterprise_basic",
      planStatus: "active",
      planSubscriptionId: enterprise.subscriptionId,
    });
    expect(after.planPaymentFailedAt ?? null).toBeNull();
    expect(await billingTitles(org)).toEqual(titles);
    const billing = await org.owner.api.get(`/api/clients/${org.clientId}/billing`);
    expect(billing.body.billing).toMatchObject({ planTier: "enterprise_basic", planStatus: "active" });
  });

  it("a processor that fails the cancellation is a 503; the redelivery finishes it, once", async () => {
    const org = await newOrganisation("Retry Co");
    const team = await buy(org, "team");
    const started = await org.owner.api.post(`/api/clients/${org.clientId}/billing/checkout`, {
      planTier: "enterprise_basic",
    });
    expect(started.status).toBe(201);
    const { session, subscription } = processor.completeCheckout(started.body.checkoutSessionId);
    const completion = stripeEvent("checkout.session.completed", session);
    // The listing fails, with the package's two retries.
    for (let attempt = 0; attempt < 3; attempt++) processor.failNext(500);
    const failed = await deliver(completion);
    expect(failed.status).toBe(503);
    // The plan changed already (the transaction came first); the old subscription is still live.
    expect(await clientConfig(org.clientId)).toMatchObject({
      planTier: "enterprise_basic",
      planSubscriptionId: subscription?.id,
    });
    expect(processor.subscriptions.get(team.subscriptionId)?.status).toBe("active");
    const redelivered = await deliver(completion);
    expect(redelivered.body.outcome).toBe("duplicate");
    expect(processor.subscriptions.get(team.subscriptionId)?.status).toBe("canceled");
    expect(requestsTo("DELETE", `/v1/subscriptions/${team.subscriptionId}`)).toHaveLength(1);
    expect(
      (await billingTitles(org)).filter((title) => title === "Plan enterprise_basic active"),
    ).toHaveLength(1);
  });
});

describe("the data plane's per-credential limit follows the tier at once", () => {
  it("basic's 100 a minute is reached; the signed upgrade lifts it to team's on the next request, same minute", async () => {
    const org = await newOrganisation("Limits Co");
    const key = `lifecycle-limit-key-${Math.random().toString(36).slice(2, 10)}`;
    const parts = await createProxyParts(org.owner, org.clientId, {
      region: REGION,
      key,
      targetBaseURL: `http://127.0.0.1:${(target.address() as AddressInfo).port}`,
    });
    const proxyId = await createProxyOf(org.owner, org.clientId, REGION, parts);
    const call = () =>
      callDataPlane(`${stack.regions[REGION]}/api/${proxyId}/thing`, { headers: { "x-api-key": key } });
    expect((await call()).status).toBe(200); // warm
    // A fresh minute, a few seconds in: the stream and the upgrade happen inside it.
    const minute = Math.floor(clock.toNextWindow() / 60_000);
    let admitted = 0;
    let refused: Awaited<ReturnType<typeof call>> | undefined;
    for (let attempt = 0; attempt < 150 && !refused; attempt++) {
      const answer = await call();
      if (answer.status === 200) admitted += 1;
      else refused = answer;
    }
    expect(refused?.status).toBe(429);
    expect(admitted).toBeGreaterThanOrEqual(100);
    expect(admitted).toBeLessThan(150);

    await buy(org, "team");
    // The same minute: the next request is admitted under team's 1,000, and so are the ones after it.
    const after = [];
    for (let attempt = 0; attempt < 20; attempt++) after.push((await call()).status);
    expect(after).toEqual(Array(20).fill(200));
    // Still the minute of the refusal: a new window did not do it.
    expect(Math.floor(clock.now() / 60_000)).toBe(minute);
  });
});

describe("a downgrade to a lower paid tier", () => {
  it("keeps the higher tier until the period's end, then the subscription's renewal makes the lower tier active", async () => {
    const org = await newOrganisation("Downgrade Co");
    const { subscriptionId } = await buy(org, "enterprise_basic");
    const renewalAt = subscriptionAsSent(subscriptionId).items.data[0].current_period_end as number;
    const scheduled = await org.owner.api.post(`/api/clients/${org.clientId}/billing/downgrade`, {
      planTier: "team",
    });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    const effectiveAt = new Date(renewalAt * 1000).toISOString();
    expect(scheduled.body).toMatchObject({
      planTier: "enterprise_basic",
      planStatus: "downgrade_scheduled",
      planPendingTier: "team",
      planPendingEffectiveAt: effectiveAt,
    });
    // At the processor: the price is team's from now (no proration), and the metadata says when.
    const changed = subscriptionAsSent(subscriptionId);
    expect(changed.items.data[0].price.id).toBe(PRICES.STRIPE_PRICE_TEAM);
    expect(changed.metadata).toMatchObject({ pendingPlanTier: "team", pendingEffectiveAt: effectiveAt });
    expect(changed.last_proration_behavior).toBe("none");

    // Stripe reports the update at once: the price names team already, but enterprise_basic stays.
    const update = stripeEvent("customer.subscription.updated", changed);
    expect((await deliver(update)).status).toBe(200);
    expect(await clientConfig(org.clientId)).toMatchObject({
      planTier: "enterprise_basic",
      planStatus: "downgrade_scheduled",
      planPendingTier: "team",
      planPendingEffectiveAt: effectiveAt,
    });
    const pending = await org.owner.api.get(`/api/clients/${org.clientId}/billing`);
    expect(pending.body.billing).toMatchObject({ planTier: "enterprise_basic", planPendingTier: "team" });

    // The period ends: the subscription renews into its next period at team's price.
    const renewed = subscriptionAsSent(subscriptionId);
    renewed.items.data[0].current_period_start = renewalAt;
    renewed.items.data[0].current_period_end = renewalAt + 30 * 86_400;
    const renewal = stripeEvent("customer.subscription.updated", renewed, renewalAt + 5);
    expect((await deliver(renewal)).body.outcome).toBe("applied");
    expect(await clientConfig(org.clientId)).toMatchObject({
      planTier: "team",
      planStatus: "active",
      planPendingTier: null,
      planPendingEffectiveAt: null,
      planExpiresAt: new Date((renewalAt + 30 * 86_400) * 1000).toISOString(),
    });
    const billing = await org.owner.api.get(`/api/clients/${org.clientId}/billing`);
    expect(billing.body.billing).toMatchObject({
      planTier: "team",
      planStatus: "active",
      planPendingTier: null,
    });
    expect((await billingTitles(org))[0]).toBe("Plan team active");
    // The runtime item the data plane reads follows.
    expect(await storedItem(keys.clientRuntime(org.clientId), REGION)).toMatchObject({
      planTier: "team",
      planStatus: "active",
    });
  });
});
