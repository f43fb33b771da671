/**
 * The plan state machine (lib/domain/plan-states.ts, docs/billing.md): every transition, stale and
 * repeated events, and the dunning decision at read time.
 */
import { describe, expect, it } from "vitest";
import {
  type BillingEvent,
  effectiveBillingStatus,
  INITIAL_PLAN_FIELDS,
  invoiceMismatch,
  nextPlanState,
  type PlanFields,
} from "#lib/domain/plan-states.ts";

const T0 = 1_800_000_000; // seconds
const DAY = 86_400;
const iso = (s: number) => new Date(s * 1000).toISOString();

let n = 0;
const event = (type: string, created: number, object: Record<string, unknown>): BillingEvent => ({
  id: `evt_${++n}`,
  type,
  created,
  data: { object },
});

const subscription = (
  created: number,
  over: {
    tier?: string;
    status?: string;
    cancel?: boolean;
    pendingTier?: string;
    periodStart?: number;
    type?: string;
    id?: string;
  } = {},
) =>
  event(over.type ?? "customer.subscription.updated", created, {
    id: over.id ?? "sub_1",
    object: "subscription",
    customer: "cus_1",
    status: over.status ?? "active",
    cancel_at_period_end: over.cancel ?? false,
    billing_cycle_anchor: T0,
    latest_invoice: "in_1",
    metadata: over.pendingTier ? { pendingTier: over.pendingTier } : {},
    items: {
      data: [
        {
          price: { id: "price_x", lookup_key: over.tier ?? "team", metadata: {} },
          current_period_start: over.periodStart ?? T0,
          current_period_end: (over.periodStart ?? T0) + 30 * DAY,
        },
      ],
    },
  });

const checkout = (created: number, tier = "team") =>
  event("checkout.session.completed", created, {
    id: "cs_1",
    object: "checkout.session",
    mode: "subscription",
    customer: "cus_1",
    subscription: "sub_1",
    invoice: "in_1",
    metadata: { planTier: tier },
  });

const invoice = (type: "invoice.paid" | "invoice.payment_failed", created: number, id = "in_2") =>
  event(type, created, {
    id,
    object: "invoice",
    customer: "cus_1",
    subscription: "sub_1",
    lines: { data: [{ period: { start: T0 + 30 * DAY, end: T0 + 60 * DAY } }] },
  });

/** Apply events in order, as the webhook does (no change: the fields stay). */
function run(events: BillingEvent[], from: PlanFields = INITIAL_PLAN_FIELDS) {
  let fields = from;
  const notified: string[] = [];
  for (const e of events) {
    const t = nextPlanState(fields, e);
    if (!t) continue;
    fields = { ...fields, ...t.changes };
    if (t.notify) notified.push(t.title);
  }
  return { fields, notified };
}

const teamActive = run([checkout(T0), subscription(T0 + 1)]).fields;

describe("plan state machine", () => {
  it("checkout completion: the tier is active at once, with renewal, anchor and invoice", () => {
    const t = nextPlanState(INITIAL_PLAN_FIELDS, checkout(T0));
    expect(t?.notify).toBe(true);
    expect({ ...INITIAL_PLAN_FIELDS, ...t?.changes }).toMatchObject({
      planTier: "team",
      planStatus: "active",
      planRenewedAt: iso(T0),
      planBillingAnchor: iso(T0),
      planStripeInvoiceId: "in_1",
      planSubscriptionId: "sub_1",
      planStateAt: T0,
    });
  });

  it("a subscription created or updated active sets the tier and the period end", () => {
    const t = nextPlanState(INITIAL_PLAN_FIELDS, subscription(T0, { type: "customer.subscription.created" }));
    expect({ ...INITIAL_PLAN_FIELDS, ...t?.changes }).toMatchObject({
      planTier: "team",
      planStatus: "active",
      planExpiresAt: iso(T0 + 30 * DAY),
      planBillingAnchor: iso(T0),
      planStripeInvoiceId: "in_1",
      planPeriodStart: T0,
    });
    expect(t?.notify).toBe(true);
  });

  it("the completion and the subscription update, twice and in any order, notify once", () => {
    const orders = [
      [checkout(T0), subscription(T0 + 1), checkout(T0)],
      [subscription(T0 + 1), checkout(T0), checkout(T0)],
      [checkout(T0), checkout(T0), subscription(T0 + 1)],
    ];
    for (const events of orders) {
      const { fields, notified } = run(events);
      expect(notified).toEqual(["Plan team active"]);
      expect(fields).toMatchObject({
        planTier: "team",
        planStatus: "active",
        planExpiresAt: iso(T0 + 30 * DAY),
      });
    }
  });

  it("setup or payment mode Checkout, and unknown tiers or event types, change nothing", () => {
    const setup = event("checkout.session.completed", T0, { mode: "setup", customer: "cus_1", metadata: {} });
    expect(nextPlanState(INITIAL_PLAN_FIELDS, setup)).toBeNull();
    expect(nextPlanState(INITIAL_PLAN_FIELDS, checkout(T0, "gold"))).toBeNull();
    expect(nextPlanState(INITIAL_PLAN_FIELDS, event("customer.created", T0, { id: "cus_1" }))).toBeNull();
  });

  it("cancellation at period end: downgrade_scheduled to basic, then expired with basic limits", () => {
    const scheduled = nextPlanState(teamActive, subscription(T0 + 10, { cancel: true }));
    expect(scheduled?.changes).toMatchObject({
      planStatus: "downgrade_scheduled",
      planPendingTier: "basic",
      planPendingEffectiveAt: iso(T0 + 30 * DAY),
    });
    const after = { ...teamActive, ...scheduled?.changes };
    expect(after.planTier).toBe("team");
    const ended = nextPlanState(
      after,
      subscription(T0 + 30 * DAY, {
        type: "customer.subscription.deleted",
        status: "canceled",
        cancel: true,
      }),
    );
    expect(ended?.changes).toMatchObject({
      planStatus: "expired",
      planPendingTier: null,
      planPendingEffectiveAt: null,
    });
    expect(ended?.notify).toBe(true);
  });

  it("a pending lower tier: downgrade_scheduled, then the new tier at the period's end", () => {
    const enterprise = run([
      checkout(T0, "enterprise_basic"),
      subscription(T0 + 1, { tier: "enterprise_basic" }),
    ]).fields;
    const scheduled = nextPlanState(
      enterprise,
      subscription(T0 + 10, { tier: "enterprise_basic", pendingTier: "team" }),
    );
    expect({ ...enterprise, ...scheduled?.changes }).toMatchObject({
      planTier: "enterprise_basic",
      planStatus: "downgrade_scheduled",
      planPendingTier: "team",
      planPendingEffectiveAt: iso(T0 + 30 * DAY),
    });
    const after = { ...enterprise, ...scheduled?.changes };
    const renewed = nextPlanState(
      after,
      subscription(T0 + 30 * DAY, { tier: "team", periodStart: T0 + 30 * DAY }),
    );
    expect(renewed?.changes).toMatchObject({
      planTier: "team",
      planStatus: "active",
      planPendingTier: null,
      planPendingEffectiveAt: null,
      planExpiresAt: iso(T0 + 60 * DAY),
    });
  });

  it("a downgrade whose price already changed (scheduleClientDowngrade): the paid tier stays until the effective time", () => {
    const enterprise = run([
      checkout(T0, "enterprise_basic"),
      subscription(T0 + 1, { tier: "enterprise_basic" }),
    ]).fields;
    // As lib/domain/billing.ts updates it: the lower tier's price at once, and when it takes effect.
    const changed = subscription(T0 + 10, { tier: "team" });
    const object = changed.data.object as Record<string, unknown>;
    object.metadata = { clientId: "c1", pendingPlanTier: "team", pendingEffectiveAt: iso(T0 + 30 * DAY) };
    const scheduled = nextPlanState(enterprise, changed);
    expect({ ...enterprise, ...scheduled?.changes }).toMatchObject({
      planTier: "enterprise_basic",
      planStatus: "downgrade_scheduled",
      planPendingTier: "team",
      planPendingEffectiveAt: iso(T0 + 30 * DAY),
    });
    const after = { ...enterprise, ...scheduled?.changes };
    const next = subscription(T0 + 30 * DAY, { tier: "team", periodStart: T0 + 30 * DAY });
    (next.data.object as Record<string, unknown>).metadata = object.metadata;
    expect(nextPlanState(after, next)?.changes).toMatchObject({
      planTier: "team",
      planStatus: "active",
      planPendingTier: null,
    });
  });

  it("a deleted subscription with a pending paid tier moves to that tier", () => {
    const pending = {
      ...teamActive,
      planTier: "enterprise_basic",
      planStatus: "downgrade_scheduled",
      planPendingTier: "team",
    };
    const t = nextPlanState(
      pending,
      subscription(T0 + 30 * DAY, { type: "customer.subscription.deleted", status: "canceled" }),
    );
    expect(t?.changes).toMatchObject({ planTier: "team", planStatus: "active", planPendingTier: null });
  });

  it("a failed invoice: payment_failed from its time; a retry keeps the start; a paid invoice restores", () => {
    const failed = nextPlanState(teamActive, invoice("invoice.payment_failed", T0 + 30 * DAY));
    expect(failed?.changes).toMatchObject({
      planStatus: "payment_failed",
      planPaymentFailedAt: iso(T0 + 30 * DAY),
      planStripeInvoiceId: "in_2",
    });
    const state = { ...teamActive, ...failed?.changes };
    expect(nextPlanState(state, invoice("invoice.payment_failed", T0 + 33 * DAY))).toBeNull();
    const suspended = { ...state, billingStatus: "suspended" as const };
    const paid = nextPlanState(suspended, invoice("invoice.paid", T0 + 34 * DAY));
    expect(paid?.notify).toBe(true);
    expect(paid?.changes).toMatchObject({
      planStatus: "active",
      planPaymentFailedAt: null,
      billingStatus: "active",
      planRenewedAt: iso(T0 + 34 * DAY),
      planExpiresAt: iso(T0 + 60 * DAY),
    });
  });

  it("an invoice of another subscription (one an upgrade replaced) changes nothing; of the plan's own, it does", () => {
    const of = (subscription: unknown, parent?: unknown) => {
      const e = invoice("invoice.payment_failed", T0 + 30 * DAY);
      delete e.data.object.subscription;
      Object.assign(e.data.object, parent ? { parent } : { subscription });
      return e;
    };
    expect(teamActive.planSubscriptionId).toBe("sub_1");
    expect(nextPlanState(teamActive, of("sub_old"))).toBeNull();
    expect(
      nextPlanState(teamActive, of(undefined, { subscription_details: { subscription: "sub_old" } })),
    ).toBeNull();
    expect(nextPlanState(teamActive, of("sub_1"))?.changes.planStatus).toBe("payment_failed");
    expect(
      nextPlanState(teamActive, of(undefined, { subscription_details: { subscription: "sub_1" } }))?.changes
        .planStatus,
    ).toBe("payment_failed");
  });

  it("an invoice naming no subscription, or arriving before the plan has one, changes nothing", () => {
    const bare = (type: "invoice.paid" | "invoice.payment_failed", over: Record<string, unknown>) => {
      const e = invoice(type, T0 + 30 * DAY);
      const { subscription: _named, ...rest } = e.data.object;
      e.data.object = { ...rest, ...over };
      return e;
    };
    const failed = run([invoice("invoice.payment_failed", T0 + 30 * DAY)], teamActive).fields;
    for (const over of [
      {},
      { subscription: null },
      { parent: null },
      { parent: { subscription_details: null } },
    ]) {
      expect(nextPlanState(teamActive, bare("invoice.payment_failed", over))).toBeNull();
      expect(nextPlanState(failed, bare("invoice.paid", over))).toBeNull();
      expect(invoiceMismatch(failed, bare("invoice.paid", over))).toBe("the invoice names no subscription");
    }
    // Upgrade requested, no subscription recorded yet: even an invoice naming one changes nothing.
    const requested: PlanFields = {
      ...INITIAL_PLAN_FIELDS,
      planStatus: "upgrade_requested",
      planPendingTier: "team",
    };
    expect(nextPlanState(requested, invoice("invoice.paid", T0))).toBeNull();
    expect(nextPlanState(requested, invoice("invoice.payment_failed", T0))).toBeNull();
    expect(invoiceMismatch(requested, invoice("invoice.paid", T0))).toBe("the plan has no subscription yet");
    // The plan's own: no mismatch; other types are not invoices.
    expect(invoiceMismatch(failed, invoice("invoice.paid", T0 + 31 * DAY))).toBeNull();
    expect(invoiceMismatch(failed, subscription(T0 + 31 * DAY))).toBeNull();
  });

  it("a subscription update during payment_failed does not clear the failure", () => {
    const failed = run([invoice("invoice.payment_failed", T0 + 30 * DAY)], teamActive).fields;
    const t = nextPlanState(failed, subscription(T0 + 30 * DAY + 5, { periodStart: T0 + 30 * DAY }));
    expect(t?.changes.planStatus).toBeUndefined();
    expect({ ...failed, ...t?.changes }.planStatus).toBe("payment_failed");
  });

  it("a late subscription update never undoes a newer state", () => {
    const scheduled = run([subscription(T0 + 10, { cancel: true })], teamActive).fields;
    // The update from before the cancellation arrives late.
    expect(nextPlanState(scheduled, subscription(T0 + 5))).toBeNull();
    // And one of an older period, even if its event is newer (a re-sent object).
    const nextPeriod = run([subscription(T0 + 30 * DAY, { periodStart: T0 + 30 * DAY })], teamActive).fields;
    expect(
      nextPlanState(nextPeriod, subscription(T0 + 30 * DAY + 9, { cancel: true, periodStart: T0 })),
    ).toBeNull();
    // A late failure does not undo a newer payment.
    const paid = run(
      [invoice("invoice.payment_failed", T0 + 30 * DAY), invoice("invoice.paid", T0 + 31 * DAY)],
      teamActive,
    ).fields;
    expect(paid.planStatus).toBe("active");
    expect(nextPlanState(paid, invoice("invoice.payment_failed", T0 + 30 * DAY + 1))).toBeNull();
  });

  it("news of another subscription changes nothing", () => {
    expect(nextPlanState(teamActive, subscription(T0 + 50, { id: "sub_old", cancel: true }))).toBeNull();
  });
});

describe("dunning at read time", () => {
  const failedAt = iso(T0);
  it("suspended once the grace period has passed since the first failure", () => {
    expect(
      effectiveBillingStatus(
        { billingStatus: "active", paymentFailedAt: failedAt },
        (T0 + 7 * DAY - 1) * 1000,
      ),
    ).toBe("active");
    expect(
      effectiveBillingStatus({ billingStatus: "active", paymentFailedAt: failedAt }, (T0 + 7 * DAY) * 1000),
    ).toBe("suspended");
    expect(
      effectiveBillingStatus(
        { billingStatus: "active", paymentFailedAt: failedAt },
        (T0 + 2 * DAY) * 1000,
        1,
      ),
    ).toBe("suspended");
  });
  it("no failure: the stored status", () => {
    expect(effectiveBillingStatus({ billingStatus: "active", paymentFailedAt: null }, T0 * 1000)).toBe(
      "active",
    );
    expect(effectiveBillingStatus({ billingStatus: "suspended" }, T0 * 1000)).toBe("suspended");
  });
});
