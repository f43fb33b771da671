/**
 * The plan state machine (issue 24, docs/billing.md has the table): plain functions from a
 * client's stored plan fields and one Stripe event (already verified and parsed) to the new plan
 * fields, or `null` for "no change". No store, no clock: the event's own times are the times.
 *
 * Ordering: Stripe delivers events at least once and in any order. Each applied event stores its
 * time (`planStateAt`, the event's `created`, seconds) and, for a subscription, the start of the
 * period it describes (`planPeriodStart`). An event older than the last applied one, or a
 * subscription object of an older period, is stale and changes nothing, so a late
 * `customer.subscription.updated` never undoes a newer state. An event that would leave every
 * plan field as it is is "no change" too (a repeated completion, say): a transition happens once.
 */
import { type PlanTier, planTierOf } from "./plans.ts";

/** The plan fields of a client configuration this machine reads and writes. */
export interface PlanFields {
  planTier: string;
  planStatus: string;
  planPendingTier: string | null;
  planPendingEffectiveAt: string | null;
  planExpiresAt: string | null;
  planRenewedAt: string | null;
  planBillingAnchor: string | null;
  planStripeInvoiceId: string | null;
  billingStatus: "active" | "suspended";
  /** When the current run of failed payments began (null: none); dunning counts from it. */
  planPaymentFailedAt: string | null;
  /** The Stripe subscription the plan follows (null: none yet). */
  planSubscriptionId: string | null;
  /** The `created` time (seconds) of the last event applied. */
  planStateAt: number | null;
  /** The `current_period_start` (seconds) of the last subscription object applied. */
  planPeriodStart: number | null;
}

/** The plan fields of a configuration that never had a subscription. */
export const INITIAL_PLAN_FIELDS: PlanFields = {
  planTier: "basic",
  planStatus: "active",
  planPendingTier: null,
  planPendingEffectiveAt: null,
  planExpiresAt: null,
  planRenewedAt: null,
  planBillingAnchor: null,
  planStripeInvoiceId: null,
  billingStatus: "active",
  planPaymentFailedAt: null,
  planSubscriptionId: null,
  planStateAt: null,
  planPeriodStart: null,
};

/** The event types this machine handles; any other is ignored (answered 200, nothing changes). */
export const HANDLED_EVENT_TYPES = [
  "checkout.session.completed",
  "customer.subscription.created",
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "invoice.paid",
  "invoice.payment_failed",
] as const;
export type HandledEventType = (typeof HANDLED_EVENT_TYPES)[number];

/** The part of a Stripe event this machine reads (the package's `Stripe.Event` fits it). */
export interface BillingEvent {
  id: string;
  type: string;
  /** Seconds since the epoch. */
  created: number;
  data: { object: Record<string, unknown> };
}

export interface PlanTransition {
  /** The fields that change (only those). */
  changes: Partial<PlanFields>;
  /**
   * Whether the plan's state changed (tier, status, pending change, billing): the client gets a
   * notification and its owners an e-mail. A new period end or invoice id alone is recorded quietly.
   */
  notify: boolean;
  /** One line for the notification's title, and a sentence for its message and the e-mail. */
  title: string;
  message: string;
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
const text = (value: unknown): string | null => (typeof value === "string" && value ? value : null);
const record = (value: unknown): Record<string, unknown> =>
  value && typeof value === "object" ? (value as Record<string, unknown>) : {};
const seconds = (value: unknown): number | null => (typeof value === "number" ? value : null);
/** An ISO 8601 time as epoch seconds (null when it is not one). */
const secondsOfIso = (value: unknown): number | null => {
  const ms = Date.parse(text(value) ?? "");
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : null;
};
/** A field that is an id, or an expanded object with one. */
const idOf = (value: unknown): string | null => text(value) ?? text(record(value).id);

/** A known paid tier named in metadata or a price's lookup key (`basic` is never bought). */
function tierNamed(value: unknown): PlanTier | null {
  const tier = text(value);
  return tier && planTierOf(tier) === tier && tier !== "basic" ? (tier as PlanTier) : null;
}

/** The Stripe customer an event is about (what finds the client). */
export function customerOf(event: BillingEvent): string | null {
  return idOf(event.data.object.customer);
}

/** The subscription's first item: its price's tier and the period (newer API versions keep it there). */
function subscriptionView(subscription: Record<string, unknown>) {
  const items = record(subscription.items).data;
  const item = record(Array.isArray(items) ? items[0] : undefined);
  const price = record(item.price);
  const metadata = record(subscription.metadata);
  return {
    id: text(subscription.id),
    status: text(subscription.status),
    tier:
      tierNamed(record(price.metadata).planTier) ??
      tierNamed(price.lookup_key) ??
      tierNamed(metadata.planTier),
    // What scheduleClientDowngrade (lib/domain/billing.ts) writes: the tier to come and when.
    pendingTier: tierNamed(metadata.pendingPlanTier) ?? tierNamed(metadata.pendingTier),
    pendingEffectiveAt: secondsOfIso(metadata.pendingEffectiveAt),
    cancelAtPeriodEnd: subscription.cancel_at_period_end === true,
    periodStart: seconds(item.current_period_start) ?? seconds(subscription.current_period_start),
    periodEnd: seconds(item.current_period_end) ?? seconds(subscription.current_period_end),
    anchor: seconds(subscription.billing_cycle_anchor),
    latestInvoice: idOf(subscription.latest_invoice),
  };
}

const PAID_STATUSES = new Set(["active", "trialing"]);

/** Only the fields that differ from `current`; null when none does. */
function diff(current: PlanFields, next: Partial<PlanFields>): Partial<PlanFields> | null {
  const changes: Partial<PlanFields> = {};
  for (const [key, value] of Object.entries(next) as [keyof PlanFields, unknown][]) {
    if (current[key] !== value) (changes as Record<string, unknown>)[key] = value;
  }
  return Object.keys(changes).length ? changes : null;
}

/** Fields whose change alone is bookkeeping: no transition by itself. */
const BOOKKEEPING: readonly (keyof PlanFields)[] = [
  "planSubscriptionId",
  "planPeriodStart",
  "planStateAt",
  "planRenewedAt",
  "planBillingAnchor",
];

/** Fields whose change is a state transition (notified). */
const STATE: readonly (keyof PlanFields)[] = [
  "planTier",
  "planStatus",
  "planPendingTier",
  "planPendingEffectiveAt",
  "billingStatus",
  "planPaymentFailedAt",
];

function transition(
  current: PlanFields,
  event: BillingEvent,
  next: Partial<PlanFields>,
  title: string,
  message: string,
): PlanTransition | null {
  const changes = diff(current, next);
  if (!changes || Object.keys(changes).every((key) => BOOKKEEPING.includes(key as keyof PlanFields)))
    return null;
  const notify = STATE.some((key) => key in changes);
  return { changes: { ...changes, planStateAt: event.created }, notify, title, message };
}

/** Older than the last applied event: changes nothing. */
const stale = (current: PlanFields, event: BillingEvent) =>
  current.planStateAt !== null && event.created < current.planStateAt;

function fromSubscription(current: PlanFields, event: BillingEvent): PlanTransition | null {
  const sub = subscriptionView(event.data.object);
  if (!sub.id) return null;
  // Another subscription's news (an old, replaced one) says nothing about this plan.
  if (
    current.planSubscriptionId &&
    current.planSubscriptionId !== sub.id &&
    event.type !== "customer.subscription.created"
  )
    return null;
  if (
    sub.periodStart !== null &&
    current.planPeriodStart !== null &&
    sub.periodStart < current.planPeriodStart
  )
    return null;
  const bookkeeping = {
    planSubscriptionId: sub.id,
    ...(sub.periodStart !== null ? { planPeriodStart: sub.periodStart } : {}),
  };
  const periodEnd = sub.periodEnd !== null ? iso(sub.periodEnd) : current.planExpiresAt;

  if (event.type === "customer.subscription.deleted" || sub.status === "canceled") {
    const fallback =
      current.planPendingTier && current.planPendingTier !== "basic" ? current.planPendingTier : null;
    const next: Partial<PlanFields> = {
      ...bookkeeping,
      planTier: fallback ?? current.planTier,
      planStatus: fallback ? "active" : "expired",
      planPendingTier: null,
      planPendingEffectiveAt: null,
      planPaymentFailedAt: null,
      billingStatus: "active",
    };
    return transition(
      current,
      event,
      next,
      fallback ? `Plan changed to ${fallback}` : "Plan expired",
      fallback
        ? `The subscription period ended; the organisation is now on the ${fallback} plan.`
        : `The subscription ended; the ${current.planTier} plan has expired and the basic plan's limits apply.`,
    );
  }
  if (sub.status === "past_due" || sub.status === "unpaid") {
    // The invoice events carry dunning; a subscription in arrears only records its period.
    return null;
  }
  if (!sub.status || !PAID_STATUSES.has(sub.status) || !sub.tier) return null;

  // A downgrade to a lower paid tier changes the subscription's price at once (no proration, so the
  // next invoice is the new price) and records when it takes effect: until then the tier paid for
  // stays, although the price already names the lower one.
  const priceChangedAhead =
    sub.pendingTier !== null &&
    sub.pendingTier === sub.tier &&
    sub.pendingEffectiveAt !== null &&
    sub.pendingEffectiveAt > event.created;
  if (sub.cancelAtPeriodEnd || (sub.pendingTier && sub.pendingTier !== sub.tier) || priceChangedAhead) {
    const pending = sub.cancelAtPeriodEnd ? "basic" : (sub.pendingTier as string);
    const next: Partial<PlanFields> = {
      ...bookkeeping,
      planTier: priceChangedAhead ? current.planTier : sub.tier,
      planStatus: "downgrade_scheduled",
      planPendingTier: pending,
      planPendingEffectiveAt: periodEnd,
      planExpiresAt: periodEnd,
    };
    return transition(
      current,
      event,
      next,
      sub.cancelAtPeriodEnd ? "Plan cancellation scheduled" : `Change to ${pending} scheduled`,
      `The ${priceChangedAhead ? current.planTier : sub.tier} plan stays until ${periodEnd ?? "the end of the period"}; then ${
        sub.cancelAtPeriodEnd ? "it expires and the basic plan's limits apply" : `the ${pending} plan starts`
      }.`,
    );
  }
  const renewed =
    current.planTier !== sub.tier || current.planStatus !== "active" || current.planExpiresAt !== periodEnd;
  const next: Partial<PlanFields> = {
    ...bookkeeping,
    planTier: sub.tier,
    // A failed payment stays failed until an invoice is paid.
    planStatus: current.planStatus === "payment_failed" ? "payment_failed" : "active",
    planPendingTier: null,
    planPendingEffectiveAt: null,
    planExpiresAt: periodEnd,
    ...(renewed && current.planStatus !== "payment_failed" ? { planRenewedAt: iso(event.created) } : {}),
    ...(sub.anchor !== null ? { planBillingAnchor: iso(sub.anchor) } : {}),
    ...(sub.latestInvoice ? { planStripeInvoiceId: sub.latestInvoice } : {}),
  };
  return transition(
    current,
    event,
    next,
    `Plan ${sub.tier} active`,
    `The organisation is on the ${sub.tier} plan${periodEnd ? ` until ${periodEnd}, renewed automatically` : ""}.`,
  );
}

function fromCheckout(current: PlanFields, event: BillingEvent): PlanTransition | null {
  const session = event.data.object;
  // Setup mode (an MSP's payment method) and payment mode change no plan.
  if (session.mode !== "subscription") return null;
  const tier = tierNamed(record(session.metadata).planTier);
  const subscription = idOf(session.subscription);
  if (!tier || !subscription) return null;
  const expanded = record(session.subscription);
  const view = expanded.id ? subscriptionView(expanded) : undefined;
  const next: Partial<PlanFields> = {
    planSubscriptionId: subscription,
    planTier: tier,
    planStatus: "active",
    planPendingTier: null,
    planPendingEffectiveAt: null,
    planPaymentFailedAt: null,
    billingStatus: "active",
    planRenewedAt: iso(event.created),
    planBillingAnchor: view?.anchor ? iso(view.anchor) : (current.planBillingAnchor ?? iso(event.created)),
    ...(view?.periodEnd ? { planExpiresAt: iso(view.periodEnd) } : {}),
    ...(idOf(session.invoice) ? { planStripeInvoiceId: idOf(session.invoice) } : {}),
  };
  return transition(
    current,
    event,
    next,
    `Plan ${tier} active`,
    `The upgrade to the ${tier} plan is complete; its limits apply now.`,
  );
}

/** The subscription an invoice names (API 2025-03-31 on: under `parent`), or null. */
function subscriptionOfInvoice(invoice: Record<string, unknown>): string | null {
  return idOf(invoice.subscription) ?? idOf(record(record(invoice.parent).subscription_details).subscription);
}

/**
 * Why an invoice event says nothing about the plan, or null when it names the subscription the
 * plan follows (`planSubscriptionId`, recorded by the Checkout's completion or the subscription's
 * own events). An invoice naming no subscription (a one-off invoice, or a forged event), another
 * one (the final invoice of a subscription an upgrade replaced), or arriving before the plan has a
 * subscription, changes nothing.
 */
export function invoiceMismatch(current: PlanFields, event: BillingEvent): string | null {
  if (event.type !== "invoice.paid" && event.type !== "invoice.payment_failed") return null;
  const named = subscriptionOfInvoice(event.data.object);
  if (!named) return "the invoice names no subscription";
  if (!current.planSubscriptionId) return "the plan has no subscription yet";
  if (named !== current.planSubscriptionId) return "the invoice is of another subscription than the plan's";
  return null;
}

function fromInvoice(current: PlanFields, event: BillingEvent): PlanTransition | null {
  const invoice = event.data.object;
  const invoiceId = text(invoice.id);
  if (!invoiceId) return null;
  // Only an invoice of the plan's own subscription changes the plan.
  if (invoiceMismatch(current, event)) return null;
  if (event.type === "invoice.payment_failed") {
    const next: Partial<PlanFields> = {
      planStatus: "payment_failed",
      // The first failure of a run starts the grace period; retries do not move it.
      planPaymentFailedAt: current.planPaymentFailedAt ?? iso(event.created),
      planStripeInvoiceId: invoiceId,
    };
    return transition(
      current,
      event,
      next,
      "Payment failed",
      "The last invoice could not be charged. Update the payment method in the Billing Portal; without payment the organisation's proxies are suspended after the grace period.",
    );
  }
  // invoice.paid
  const lines = record(invoice.lines).data;
  const period = record(record(Array.isArray(lines) ? lines[0] : undefined).period);
  const periodEnd = seconds(period.end);
  const next: Partial<PlanFields> = {
    planStatus: current.planStatus === "payment_failed" ? "active" : current.planStatus,
    planPaymentFailedAt: null,
    billingStatus: "active",
    planStripeInvoiceId: invoiceId,
    planRenewedAt: iso(event.created),
    ...(periodEnd && current.planStatus !== "expired" ? { planExpiresAt: iso(periodEnd) } : {}),
  };
  const recovered = current.planStatus === "payment_failed" || current.billingStatus === "suspended";
  return transition(
    current,
    event,
    next,
    recovered ? "Payment received: service restored" : "Invoice paid",
    recovered
      ? "The outstanding invoice is paid; the plan is active again and the proxies serve traffic."
      : "The plan's invoice is paid.",
  );
}

/**
 * The plan fields after `event`, given the current ones: the transition (the changed fields, a
 * title and a message), or null when the event changes nothing (another type, stale, or the same
 * state again).
 */
export function nextPlanState(current: PlanFields, event: BillingEvent): PlanTransition | null {
  if (!(HANDLED_EVENT_TYPES as readonly string[]).includes(event.type)) return null;
  if (stale(current, event)) return null;
  if (event.type === "checkout.session.completed") return fromCheckout(current, event);
  if (event.type.startsWith("customer.subscription.")) return fromSubscription(current, event);
  return fromInvoice(current, event);
}

export { DEFAULT_BILLING_GRACE_DAYS, effectiveBillingStatus } from "./dunning.ts";
