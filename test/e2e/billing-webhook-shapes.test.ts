/**
 * Signed but malformed Stripe events, and invoices of no subscription or another one
 * (docs/billing.md "The event's shape"), end to end over HTTP: every event carries a
 * real signature in Stripe's header format, so only the event's shape can refuse it.
 *
 * - A signed event whose envelope (`id`, `type`, `created`, `data.object`) or whose handled
 *   type's fields have the wrong shape is a 400 naming what is wrong, never a 5xx, and changes
 *   nothing: the organisation's configuration item (to the byte), its billing notifications, and no
 *   event marker (the same id, delivered correct afterwards, is applied).
 * - An invoice changes the plan only when it names the subscription the plan follows; one naming
 *   no subscription or another is answered 200 `unchanged` and changes nothing.
 */
import Stripe from "stripe";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { billingKeys } from "#lib/db/entities/billing.ts";
import { keys } from "#lib/db/keys.ts";
import { TestClock } from "../support/clock.ts";
import { type PaymentsEnvironment, startPaymentsEnvironment } from "../support/payment-processor.ts";
import {
  createClientFor,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const SECRET = "whsec_billing_webhook_shapes_secret";
const PRICES = { STRIPE_PRICE_TEAM: "price_team_shapes" };

const clock = new TestClock();
let stack: TestStack;
let payments: PaymentsEnvironment;
/** The organisation the current test delivers events for. */
let owner: TestUser;
let clientId: string;
let customerId: string;
let counter = 0;

/** A new organisation whose owner started an upgrade to team (`upgrade_requested`), made current. */
async function newOrganisation(name: string) {
  owner = await stack.newUser();
  clientId = await createClientFor(owner, name);
  customerId = (await config()).paymentCustomerId;
  expect(customerId).toMatch(/^cus_/);
  // An upgrade started: the state the finding's invoice moved.
  const started = await owner.api.post(`/api/clients/${clientId}/billing/checkout`, { planTier: "team" });
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  expect(await config()).toMatchObject({ planStatus: "upgrade_requested", planPendingTier: "team" });
  return { checkoutSessionId: String(started.body.checkoutSessionId) };
}

const nowSeconds = () => Math.floor(clock.now() / 1000);
const newId = () => `evt_shapes_${++counter}_${Date.now()}`;

/** POST `payload` (a string, as signed) with a valid Stripe-Signature. */
async function deliverRaw(payload: string, contentType = "application/json") {
  const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET });
  const response = await fetch(`${stack.baseUrl}/webhooks/stripe`, {
    method: "POST",
    headers: { "Content-Type": contentType, "Stripe-Signature": signature },
    body: payload,
  });
  const text = await response.text();
  let body: Record<string, any> = {};
  try {
    body = JSON.parse(text);
  } catch {
    body = { text };
  }
  return { status: response.status, body };
}

const deliver = (event: unknown) => deliverRaw(JSON.stringify(event));

const event = (type: string, object: unknown, over: Record<string, unknown> = {}) => ({
  id: newId(),
  object: "event",
  type,
  created: nowSeconds(),
  data: { object },
  ...over,
});

const config = async () => (await storedItem(keys.clientConfig(clientId))) as Record<string, any>;

async function billingNotifications() {
  const list = await owner.api.get(`/api/clients/${clientId}/notifications`);
  expect(list.status).toBe(200);
  return (list.body.notifications as { type: string; title: string; notificationId: string }[]).filter(
    (n) => n.type === "billing",
  );
}

/** The state an event must not touch: the configuration item and the billing notifications. */
const snapshot = async () => ({ config: await config(), notifications: await billingNotifications() });

/** The objects of the handled types, correct but for what a case changes. */
const invoiceObject = (over: Record<string, unknown> = {}) => ({
  id: `in_${counter}`,
  object: "invoice",
  customer: customerId,
  ...over,
});
const subscriptionObject = (over: Record<string, unknown> = {}) => ({
  id: "sub_shapes_other",
  object: "subscription",
  customer: customerId,
  status: "active",
  cancel_at_period_end: false,
  metadata: {},
  items: {
    data: [
      {
        price: { id: "price_team_shapes", lookup_key: "team", metadata: {} },
        current_period_start: nowSeconds(),
        current_period_end: nowSeconds() + 30 * 86_400,
      },
    ],
  },
  ...over,
});
const sessionObject = (over: Record<string, unknown> = {}) => ({
  id: "cs_shapes_forged",
  object: "checkout.session",
  mode: "subscription",
  customer: customerId,
  subscription: "sub_shapes_forged",
  metadata: { planTier: "team" },
  ...over,
});

/** Deeply nested arrays (`depth` levels), as a fuzzer would send. */
const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

/** Each case: a signed body (a string) and the id of its event, when it has one. */
const MALFORMED: [name: string, build: () => { payload: string; id?: string; contentType?: string }][] = [
  ["data null", () => json(event("invoice.paid", null, { data: null }))],
  ["data missing", () => json(omit(event("invoice.paid", invoiceObject()), "data"))],
  ["data.object missing", () => json(event("invoice.paid", null, { data: {} }))],
  ["data.object null", () => json(event("invoice.paid", null))],
  ["data.object a string", () => json(event("invoice.paid", "in_1"))],
  ["data.object an array", () => json(event("invoice.paid", [invoiceObject()]))],
  ["created a string", () => json(event("invoice.paid", invoiceObject(), { created: String(nowSeconds()) }))],
  ["created missing", () => json(omit(event("invoice.paid", invoiceObject()), "created"))],
  ["created not finite (1e999)", () => raw(event("invoice.paid", invoiceObject()), '"created":1e999')],
  ["type missing", () => json(omit(event("invoice.paid", invoiceObject()), "type"))],
  ["type a number", () => json(event("invoice.paid", invoiceObject(), { type: 7 }))],
  ["id missing", () => json(omit(event("invoice.paid", invoiceObject()), "id"))],
  ["id an object", () => json(event("invoice.paid", invoiceObject(), { id: { evil: true } }))],
  ["the body null", () => ({ payload: "null" })],
  ["the body an array", () => ({ payload: "[1,2,3]" })],
  ["the body a string", () => ({ payload: '"evt"' })],
  ["the body not JSON", () => ({ payload: "{not json" })],
  ["the body not JSON, sent as text/plain", () => ({ payload: "{not json", contentType: "text/plain" })],
  [
    "checkout.session.completed: metadata a string",
    () => json(event("checkout.session.completed", sessionObject({ metadata: "planTier=team" }))),
  ],
  [
    "checkout.session.completed: mode a number",
    () => json(event("checkout.session.completed", sessionObject({ mode: 1 }))),
  ],
  [
    "checkout.session.completed: subscription a number",
    () => json(event("checkout.session.completed", sessionObject({ subscription: 42 }))),
  ],
  [
    "checkout.session.completed: customer an object without id",
    () => json(event("checkout.session.completed", sessionObject({ customer: { name: "x" } }))),
  ],
  [
    "customer.subscription.updated: items a string",
    () => json(event("customer.subscription.updated", subscriptionObject({ items: "junk" }))),
  ],
  [
    "customer.subscription.updated: items.data an object",
    () => json(event("customer.subscription.updated", subscriptionObject({ items: { data: { 0: 1 } } }))),
  ],
  [
    "customer.subscription.updated: status a number",
    () => json(event("customer.subscription.updated", subscriptionObject({ status: 3 }))),
  ],
  [
    "customer.subscription.updated: cancel_at_period_end a string",
    () => json(event("customer.subscription.updated", subscriptionObject({ cancel_at_period_end: "yes" }))),
  ],
  [
    "customer.subscription.deleted: id missing",
    () => json(event("customer.subscription.deleted", omit(subscriptionObject(), "id"))),
  ],
  [
    "customer.subscription.created: current_period_start a string",
    () =>
      json(
        event(
          "customer.subscription.created",
          subscriptionObject({
            items: { data: [{ price: { id: "p", lookup_key: "team" }, current_period_start: "soon" }] },
          }),
        ),
      ),
  ],
  ["invoice.paid: id a number", () => json(event("invoice.paid", invoiceObject({ id: 123 })))],
  ["invoice.paid: customer a number", () => json(event("invoice.paid", invoiceObject({ customer: 5 })))],
  ["invoice.paid: lines a string", () => json(event("invoice.paid", invoiceObject({ lines: "all" })))],
  [
    "invoice.paid: a line's period end a string",
    () =>
      json(
        event("invoice.paid", invoiceObject({ lines: { data: [{ period: { start: 1, end: "later" } }] } })),
      ),
  ],
  [
    "invoice.payment_failed: subscription a number",
    () => json(event("invoice.payment_failed", invoiceObject({ subscription: 99 }))),
  ],
  [
    "invoice.payment_failed: parent a string",
    () => json(event("invoice.payment_failed", invoiceObject({ parent: "sub_x" }))),
  ],
  [
    "invoice.paid: 3,000 levels of nested arrays in a field",
    () => raw(event("invoice.paid", invoiceObject({ junk: 0 })), `"junk":${nested(3000)}`),
  ],
  [
    "invoice.paid: 1 MB of junk fields and a wrong customer type",
    () => {
      const junk = Object.fromEntries(Array.from({ length: 4000 }, (_, i) => [`f${i}`, "x".repeat(250)]));
      return json(event("invoice.paid", invoiceObject({ ...junk, customer: ["cus"] })));
    },
  ],
];

function json(value: Record<string, unknown>) {
  return { payload: JSON.stringify(value), id: typeof value.id === "string" ? value.id : undefined };
}
/** The event's JSON with `"junk":0` (or `"created":<n>`) replaced by `replacement` as written. */
function raw(value: Record<string, any>, replacement: string) {
  const text = JSON.stringify(value);
  const field = replacement.slice(0, replacement.indexOf(":") + 1);
  return { payload: text.replace(new RegExp(`${field}[^,}]*`), replacement), id: value.id as string };
}
function omit(value: Record<string, unknown>, key: string) {
  const { [key]: _gone, ...rest } = value;
  return rest;
}

beforeAll(async () => {
  payments = await startPaymentsEnvironment({
    secretKey: "sk_test_billing_webhook_shapes",
    webhookSecret: SECRET,
    env: PRICES,
  });
  stack = await startTestStack({ clock: clock.now });
});

afterAll(async () => {
  await stack?.stop();
  await payments?.stop();
});

describe("a signed event of the wrong shape", () => {
  // Each case on an organisation of its own: what one case broke cannot hide another's outcome.
  beforeEach(async () => {
    await newOrganisation(`Shapes ${counter}`);
  });

  it.each(MALFORMED)("%s: a 400 naming what is wrong, never a 5xx; nothing changes", async (_name, build) => {
    const before = await snapshot();
    const { payload, id, contentType } = build();
    const answer = await deliverRaw(payload, contentType);
    expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBeLessThan(500);
    expect(answer.status).toBe(400);
    // Ours names the fields; a body that is not JSON, nested beyond the API's 32 levels, or a number beyond a double's
    // range, is refused before it by the API's own input check (400 naming the field).
    expect(answer.body.message).toMatch(/^(Malformed Stripe event.*: \S+|Input failed data validation)/);
    if (answer.body.message === "Input failed data validation")
      expect(answer.body.errors?.[0]).toMatch(/^(body|created|data): /);
    expect(await snapshot()).toEqual(before);
    if (id) expect(await storedItem(billingKeys.stripeEvent(id))).toBeUndefined();
  });
});

describe("an invoice changes the plan only when it names the plan's subscription", () => {
  let planSubscription: string;
  let checkoutSessionId: string;
  beforeAll(async () => {
    ({ checkoutSessionId } = await newOrganisation("Invoices Co"));
  });

  it("on upgrade_requested, invoices naming no subscription or another one change nothing", async () => {
    const before = await snapshot();
    expect(before.config.planStatus).toBe("upgrade_requested");
    for (const object of [
      invoiceObject(),
      invoiceObject({ subscription: null }),
      invoiceObject({ subscription: "sub_someone_else" }),
      invoiceObject({ parent: { subscription_details: { subscription: "sub_someone_else" } } }),
    ]) {
      for (const type of ["invoice.paid", "invoice.payment_failed"]) {
        clock.advance(1000);
        const answer = await deliver(event(type, object));
        expect(answer, `${type} ${JSON.stringify(object)}`).toMatchObject({
          status: 200,
          body: { outcome: "unchanged" },
        });
      }
    }
    expect(await snapshot()).toEqual(before);
  });

  it("the completed Checkout, then a failure of its subscription and a payment of another: only the plan's own invoice restores", async () => {
    const { session, subscription } = payments.processor.completeCheckout(checkoutSessionId);
    planSubscription = String(subscription?.id);
    clock.advance(1000);
    expect((await deliver(event("checkout.session.completed", session))).body.outcome).toBe("applied");
    expect(await config()).toMatchObject({
      planTier: "team",
      planStatus: "active",
      planSubscriptionId: planSubscription,
    });
    clock.advance(1000);
    const failed = await deliver(
      event("invoice.payment_failed", invoiceObject({ id: "in_shapes_due", subscription: planSubscription })),
    );
    expect(failed.body.outcome).toBe("applied");
    expect((await config()).planStatus).toBe("payment_failed");

    const before = await snapshot();
    for (const object of [
      invoiceObject({ id: "in_shapes_due" }),
      invoiceObject({ id: "in_shapes_due", subscription: "sub_someone_else" }),
    ]) {
      clock.advance(1000);
      expect((await deliver(event("invoice.paid", object))).body.outcome).toBe("unchanged");
    }
    expect(await snapshot()).toEqual(before);

    clock.advance(1000);
    const paid = await deliver(
      event(
        "invoice.paid",
        invoiceObject({
          id: "in_shapes_due",
          parent: { subscription_details: { subscription: planSubscription } },
        }),
      ),
    );
    expect(paid.body.outcome).toBe("applied");
    expect(await config()).toMatchObject({ planStatus: "active", planPaymentFailedAt: null });
    expect((await billingNotifications()).map((n) => n.title).slice(0, 2)).toEqual([
      "Payment received: service restored",
      "Payment failed",
    ]);
  });
});

describe("no marker for a refused event", () => {
  it("the same event id, delivered correct after its malformed delivery, is applied", async () => {
    clock.advance(1000);
    const subscription = payments.processor.subscriptions.get(String((await config()).planSubscriptionId));
    expect(subscription?.status).toBe("active");
    const object = { ...structuredClone(subscription), cancel_at_period_end: true };
    const good = event("customer.subscription.updated", object);
    const broken = { ...good, data: { object: { ...object, cancel_at_period_end: "true" } } };
    expect((await deliver(broken)).status).toBe(400);
    expect(await storedItem(billingKeys.stripeEvent(good.id))).toBeUndefined();
    const applied = await deliver(good);
    expect(applied.body, JSON.stringify(applied.body)).toMatchObject({ outcome: "applied" });
    expect(await config()).toMatchObject({ planStatus: "downgrade_scheduled", planPendingTier: "basic" });
    expect(await storedItem(billingKeys.stripeEvent(good.id))).toBeDefined();
  });
});
