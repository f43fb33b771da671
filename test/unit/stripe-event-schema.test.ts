/**
 * The shape of a Stripe event (lib/domain/stripe-event-schema.ts, docs/billing.md "The event's
 * shape"): the envelope of every event, the fields each handled type reads, unknown fields kept,
 * and a refusal that names the field.
 */
import { describe, expect, it } from "vitest";
import { MALFORMED_EVENT, parseStripeEvent } from "#lib/domain/stripe-event-schema.ts";
import { DomainError } from "#lib/shared/errors.ts";

const envelope = (type: string, object: unknown, over: Record<string, unknown> = {}) => ({
  id: "evt_1",
  object: "event",
  type,
  created: 1_800_000_000,
  livemode: false,
  data: { object, previous_attributes: {} },
  ...over,
});

const session = {
  id: "cs_1",
  object: "checkout.session",
  mode: "subscription",
  customer: "cus_1",
  subscription: "sub_1",
  invoice: null,
  metadata: { planTier: "team" },
  client_reference_id: "client-1",
  setup_intent: null,
  amount_total: 4900,
};
const subscription = {
  id: "sub_1",
  object: "subscription",
  customer: { id: "cus_1", object: "customer" },
  status: "active",
  cancel_at_period_end: false,
  metadata: {},
  billing_cycle_anchor: 1_800_000_000,
  latest_invoice: "in_1",
  items: {
    object: "list",
    data: [
      {
        price: { id: "price_1", lookup_key: null, metadata: { planTier: "team" } },
        current_period_start: 1_800_000_000,
        current_period_end: 1_802_592_000,
      },
    ],
  },
};
const invoice = {
  id: "in_1",
  object: "invoice",
  customer: "cus_1",
  parent: { type: "subscription_details", subscription_details: { subscription: "sub_1" } },
  lines: { data: [{ period: { start: 1_800_000_000, end: 1_802_592_000 } }] },
};

/** The refusal's message (the test fails when there is none). */
function refusal(value: unknown): string {
  try {
    parseStripeEvent(value);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).kind).toBe("validation");
    return (error as DomainError).message;
  }
  throw new Error("the event was accepted");
}

describe("parseStripeEvent", () => {
  it("accepts Stripe's events of every handled type, keeping the fields it does not read", () => {
    const events = [
      envelope("checkout.session.completed", session),
      envelope("checkout.session.completed", { ...session, subscription: subscription }),
      envelope("checkout.session.completed", {
        ...session,
        mode: "setup",
        subscription: null,
        setup_intent: "seti_1",
      }),
      envelope("customer.subscription.created", subscription),
      envelope("customer.subscription.updated", { ...subscription, cancel_at_period_end: true }),
      envelope("customer.subscription.deleted", { ...subscription, status: "canceled", items: undefined }),
      envelope("invoice.paid", invoice),
      envelope("invoice.payment_failed", {
        ...invoice,
        parent: null,
        subscription: "sub_1",
        lines: undefined,
      }),
      // A type the service does not handle: only its envelope is checked.
      envelope("customer.updated", {
        id: "cus_1",
        object: "customer",
        metadata: { any: "thing" },
        balance: 0,
      }),
      envelope("charge.refunded", { id: "ch_1", amount: "not read" }),
    ];
    for (const value of events) expect(parseStripeEvent(value)).toEqual(JSON.parse(JSON.stringify(value)));
  });

  it("refuses an envelope of the wrong shape, naming the field", () => {
    expect(refusal(null)).toMatch(`${MALFORMED_EVENT}: the event:`);
    expect(refusal([envelope("invoice.paid", invoice)])).toMatch(/^Malformed Stripe event: the event:/);
    expect(refusal(envelope("invoice.paid", invoice, { data: null }))).toMatch(/: data: /);
    expect(refusal(envelope("invoice.paid", invoice, { data: {} }))).toMatch(/: data\.object: /);
    expect(refusal(envelope("invoice.paid", [invoice]))).toMatch(/: data\.object: /);
    expect(refusal(envelope("invoice.paid", "in_1"))).toMatch(/: data\.object: /);
    expect(refusal(envelope("invoice.paid", invoice, { created: "1800000000" }))).toMatch(/: created: /);
    expect(refusal(envelope("invoice.paid", invoice, { created: 1.5 }))).toMatch(/: created: /);
    expect(refusal(envelope("invoice.paid", invoice, { created: -1 }))).toMatch(/: created: /);
    expect(refusal(envelope("invoice.paid", invoice, { type: "" }))).toMatch(/: type: /);
    expect(refusal(envelope("invoice.paid", invoice, { type: 3 }))).toMatch(/: type: /);
    expect(refusal(envelope("invoice.paid", invoice, { id: "" }))).toMatch(/: id: /);
    expect(refusal(envelope("invoice.paid", invoice, { id: "x".repeat(256) }))).toMatch(/: id: /);
    const { data: _data, ...noData } = envelope("invoice.paid", invoice);
    expect(refusal(noData)).toMatch(/: data: /);
  });

  it("refuses a handled type whose fields have the wrong type, naming the type and the field", () => {
    const cases: [string, unknown, RegExp][] = [
      ["checkout.session.completed", { ...session, metadata: "planTier=team" }, /data\.object\.metadata: /],
      [
        "checkout.session.completed",
        { ...session, metadata: { planTier: 3 } },
        /data\.object\.metadata\.planTier: /,
      ],
      ["checkout.session.completed", { ...session, mode: 1 }, /data\.object\.mode: /],
      ["checkout.session.completed", { ...session, subscription: 42 }, /data\.object\.subscription: /],
      ["checkout.session.completed", { ...session, customer: { name: "x" } }, /data\.object\.customer: /],
      ["customer.subscription.updated", { ...subscription, items: "junk" }, /data\.object\.items: /],
      [
        "customer.subscription.updated",
        { ...subscription, items: { data: {} } },
        /data\.object\.items\.data: /,
      ],
      ["customer.subscription.updated", { ...subscription, status: 3 }, /data\.object\.status: /],
      [
        "customer.subscription.updated",
        { ...subscription, cancel_at_period_end: "yes" },
        /cancel_at_period_end: /,
      ],
      ["customer.subscription.deleted", { ...subscription, id: undefined }, /data\.object\.id: /],
      [
        "customer.subscription.created",
        { ...subscription, items: { data: [{ current_period_start: "soon" }] } },
        /data\.object\.items\.data\.0\.current_period_start: /,
      ],
      ["invoice.paid", { ...invoice, id: 123 }, /data\.object\.id: /],
      ["invoice.paid", { ...invoice, customer: 5 }, /data\.object\.customer: /],
      ["invoice.paid", { ...invoice, lines: "all" }, /data\.object\.lines: /],
      [
        "invoice.paid",
        { ...invoice, lines: { data: [{ period: { start: 1, end: "x" } }] } },
        /period\.end: /,
      ],
      ["invoice.payment_failed", { ...invoice, subscription: 99 }, /data\.object\.subscription: /],
      ["invoice.payment_failed", { ...invoice, parent: "sub_1" }, /data\.object\.parent: /],
    ];
    for (const [type, object, field] of cases) {
      const message = refusal(envelope(type, object));
      expect(message.startsWith(`${MALFORMED_EVENT} (${type}): `), message).toBe(true);
      expect(message).toMatch(field);
    }
  });

  it("names at most five problems", () => {
    const message = refusal(
      envelope("invoice.paid", { id: 1, customer: 2, subscription: 3, parent: 4, lines: 5, x: 6 }),
    );
    expect(message.split("; ")).toHaveLength(5);
  });
});
