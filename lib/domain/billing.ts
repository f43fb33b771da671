/**
 * An owner's billing operations (issue 24; docs/billing.md "Owner operations"): Checkout in
 * subscription mode for an upgrade, a downgrade or cancellation at the period's end, the Billing
 * Portal, the invoice list, and an MSP's payment method through Checkout in setup mode. No card
 * data touches the service: the processor's hosted pages collect it.
 *
 * What happens when a Checkout completes, a subscription changes or an invoice is paid is the
 * webhook's (POST /webhooks/stripe): these operations only start a change and record that it is
 * pending (`upgrade_requested`, `downgrade_scheduled`), each with a conditional write on the
 * plan as it was read, so a concurrent change is a 409 and never overwritten.
 */
import type Stripe from "stripe";
import { now } from "#lib/clock.ts";
import { getConfig } from "#lib/config.ts";
import { type ClientConfigItem, clientConfigKeys, findClientConfig } from "#lib/db/entities/client-config.ts";
import { findMspWithConfig } from "#lib/db/entities/msp.ts";
import { commitSteps, nowIso, type TransactionStep, tableName } from "#lib/db/store.ts";
import { describeError, log } from "#lib/log.ts";
import {
  badRequest,
  conflict,
  DomainError,
  notFound,
  upstreamFailed,
  validationFailed,
} from "#lib/shared/errors.ts";
import type { ClientAccess, MspAccess } from "./access.ts";
import { billingNotice, emailOwners } from "./billing-notices.ts";
import { billingSettings } from "./billing-settings.ts";
import { CLIENT_NOT_FOUND } from "./clients.ts";
import { effectiveBillingStatus } from "./dunning.ts";
import { MSP_NOT_FOUND } from "./msps.ts";
import { paymentClient } from "./payments.ts";
import {
  PLAN_TIERS,
  type PlanStatus,
  type PlanTier,
  planStatusOf,
  planTierOf,
  rateLimitForPlan,
} from "./plans.ts";

export const MSP_PAYS = "Billing is handled by the client's MSP: the MSP pays for this client's plan";
const UPDATE_PLAN = "updatePlan";
export const PLAN_CHANGED = "The client's plan changed meanwhile; reload it and try again";
const PROCESSOR_UNREACHABLE = "The payment processor could not be reached; try again";
/** The currency of a setup-mode Checkout (the MSP's top-ups are charged in USD). */
const SETUP_CURRENCY = "usd";

/** Tiers in ascending order: a higher index is an upgrade. */
const rankOf = (tier: PlanTier) => PLAN_TIERS.indexOf(tier);

/**
 * The recurring price of a paid tier (STRIPE_PRICE_<TIER>, e.g. STRIPE_PRICE_ENTERPRISE_BASIC);
 * undefined when it is not sold online (`basic` is free). Read here, not in lib/config.ts, which the
 * data plane loads at every cold start (its bundle budget).
 */
export const priceOfTier = (tier: PlanTier): string | undefined => {
  if (tier === "basic") return undefined;
  const price = process.env[`STRIPE_PRICE_${tier.toUpperCase()}`]?.trim();
  return price ? price : undefined;
};

/** The console's billing page of a client, with its outcome (APP_URL, never the request). */
export function clientBillingUrl(clientId: string, checkout?: "success" | "cancelled"): string {
  const base = `${getConfig().appUrl}/organisations/${encodeURIComponent(clientId)}/billing`;
  return checkout ? `${base}?checkout=${checkout}` : base;
}

/** The console's payment-method page of an MSP, with the setup's outcome. */
export function mspBillingUrl(mspId: string, setup: "success" | "cancelled"): string {
  return `${getConfig().appUrl}/msps/${encodeURIComponent(mspId)}/billing?setup=${setup}`;
}

async function processor(): Promise<Stripe> {
  const client = await paymentClient();
  if (!client) throw upstreamFailed("No payment processor is configured");
  return client;
}

/** One processor call: its failure is logged and answered as 502 (the service's own errors pass). */
async function call<T>(what: string, context: Record<string, string>, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof DomainError) throw error;
    log.warn(`Payment processor failed: ${what}`, { ...context, ...describeError(error) });
    throw upstreamFailed(PROCESSOR_UNREACHABLE);
  }
}

async function requireConfig(clientId: string): Promise<ClientConfigItem> {
  const config = await findClientConfig(clientId);
  if (!config) throw notFound(CLIENT_NOT_FOUND);
  return config;
}

function requireSelfBilled(config: ClientConfigItem): void {
  if (config.billingTo === "msp") throw conflict(MSP_PAYS);
}

function requireCustomer(config: ClientConfigItem): string {
  if (!config.paymentCustomerId)
    throw conflict("The client has no customer record with the payment processor; ask an operator");
  return config.paymentCustomerId;
}

/**
 * Store a pending plan change, only while the plan is still what was read (`tier`, one of
 * `statuses`, billed to the client itself). Older items without a plan field read as basic/active.
 */
async function storePending(
  clientId: string,
  read: { tier: PlanTier; statuses: readonly PlanStatus[] },
  pending: { planStatus: PlanStatus; planPendingTier: PlanTier; planPendingEffectiveAt: string | null },
  notice: { title: string; message: string } | undefined,
): Promise<string> {
  const now = nowIso();
  const statusNames = read.statuses.map((_, index) => `:s${index}`);
  const tierCondition =
    read.tier === "basic" ? "(planTier = :tier OR attribute_not_exists(planTier))" : "planTier = :tier";
  const statusCondition = `(planStatus IN (${statusNames.join(", ")})${
    read.statuses.includes("active") ? " OR attribute_not_exists(planStatus)" : ""
  })`;
  const written = notice ? billingNotice(clientId, notice, now) : undefined;
  const steps: TransactionStep[] = [
    {
      name: UPDATE_PLAN,
      action: {
        Update: {
          TableName: tableName(),
          Key: clientConfigKeys.item(clientId),
          UpdateExpression:
            "SET planStatus = :status, planPendingTier = :pendingTier, planPendingEffectiveAt = :effectiveAt, configUpdated = :now",
          ConditionExpression: `attribute_exists(pKey) AND (attribute_not_exists(billingTo) OR billingTo <> :msp) AND ${tierCondition} AND ${statusCondition}`,
          ExpressionAttributeValues: {
            ":status": pending.planStatus,
            ":pendingTier": pending.planPendingTier,
            ":effectiveAt": pending.planPendingEffectiveAt,
            ":now": now,
            ":msp": "msp",
            ":tier": read.tier,
            ...Object.fromEntries(read.statuses.map((status, index) => [`:s${index}`, status])),
          },
        },
      },
    },
    ...(written ? [written.step] : []),
  ];
  const moved = await commitSteps<"moved">(steps, {
    attempts: 3,
    cancelled: ({ failed }) => (failed.includes(UPDATE_PLAN) ? "moved" : undefined),
  });
  if (moved) throw conflict(PLAN_CHANGED);
  if (written) await emailOwners(clientId, written.notification);
  return now;
}

/** Whether storing this pending change is a transition (a repeated request writes no notice). */
function isTransition(
  config: ClientConfigItem,
  pending: { planStatus: PlanStatus; planPendingTier: PlanTier },
): boolean {
  return (
    planStatusOf(config.planStatus) !== pending.planStatus ||
    config.planPendingTier !== pending.planPendingTier
  );
}

export interface CheckoutStarted {
  url: string;
  checkoutSessionId: string;
  expiresAt: string;
}

const isoOfSeconds = (seconds: number) => new Date(seconds * 1000).toISOString();

function started(session: Stripe.Checkout.Session): CheckoutStarted {
  if (!session.url) throw upstreamFailed("The payment processor answered a Checkout Session without a URL");
  return { url: session.url, checkoutSessionId: session.id, expiresAt: isoOfSeconds(session.expires_at) };
}

/**
 * POST /api/clients/{clientId}/billing/checkout: a Checkout Session in subscription mode for a
 * higher tier; the client becomes `upgrade_requested` with `planPendingTier`. The tier changes
 * only when the webhook sees the Checkout complete.
 */
export async function startCheckout(
  member: ClientAccess,
  planTier: PlanTier,
): Promise<CheckoutStarted & { planStatus: PlanStatus; planPendingTier: PlanTier }> {
  const config = await requireConfig(member.clientId);
  requireSelfBilled(config);
  const tier = planTierOf(config.planTier);
  const status = planStatusOf(config.planStatus);
  // An expired plan is charged and limited as basic: buying its tier again is an upgrade.
  const effective: PlanTier = status === "expired" ? "basic" : tier;
  if (rankOf(planTier) <= rankOf(effective))
    throw conflict(
      planTier === effective
        ? `The client is already on the ${planTier} plan`
        : `The ${planTier} plan is below the current ${effective} plan: schedule a downgrade instead (POST /api/clients/{clientId}/billing/downgrade)`,
    );
  if (status === "payment_failed")
    throw conflict(
      "A payment failed: update the payment method in the Billing Portal before changing the plan",
    );
  if (status === "downgrade_scheduled")
    throw conflict(
      "A downgrade is scheduled: manage the subscription in the Billing Portal before upgrading",
    );
  const price = priceOfTier(planTier);
  if (!price) throw badRequest(`The ${planTier} plan cannot be bought online; contact the operator`);
  const customer = requireCustomer(config);
  const stripe = await processor();
  const metadata = { clientId: member.clientId, planTier, requestedBy: member.userId };
  const session = await call("create a Checkout Session", { clientId: member.clientId }, () =>
    stripe.checkout.sessions.create({
      mode: "subscription",
      customer,
      client_reference_id: member.clientId,
      line_items: [{ price, quantity: 1 }],
      success_url: clientBillingUrl(member.clientId, "success"),
      cancel_url: clientBillingUrl(member.clientId, "cancelled"),
      metadata,
      subscription_data: { metadata: { clientId: member.clientId, planTier } },
    }),
  );
  const answer = started(session);
  try {
    const pending = { planStatus: "upgrade_requested", planPendingTier: planTier } as const;
    await storePending(
      member.clientId,
      { tier, statuses: ["active", "upgrade_requested", "expired"] },
      { ...pending, planPendingEffectiveAt: null },
      isTransition(config, pending)
        ? {
            title: `Upgrade to ${planTier} started`,
            message: `An owner started the payment for the ${planTier} plan. The plan changes once the payment completes; until then the ${effective} plan's limits apply.`,
          }
        : undefined,
    );
  } catch (error) {
    // The plan changed under us: the session must not be usable (best effort; it expires anyway).
    await stripe.checkout.sessions.expire(session.id).catch((failure: unknown) =>
      log.warn("Could not expire an unused Checkout Session", {
        clientId: member.clientId,
        checkoutSessionId: session.id,
        ...describeError(failure),
      }),
    );
    throw error;
  }
  log.info("Checkout started", { clientId: member.clientId, planTier, checkoutSessionId: session.id });
  return { ...answer, planStatus: "upgrade_requested", planPendingTier: planTier };
}

/** The customer's live subscription for this client (its metadata names the client, else the first). */
async function currentSubscription(
  stripe: Stripe,
  customer: string,
  clientId: string,
): Promise<Stripe.Subscription | undefined> {
  const { data } = await call("list subscriptions", { clientId }, () =>
    stripe.subscriptions.list({ customer, status: "active", limit: 10 }),
  );
  return data.find((subscription) => subscription.metadata?.clientId === clientId) ?? data[0];
}

/** The end of the subscription's current period: the earliest of its items' (API 2025-03-31 on). */
function periodEndOf(subscription: Stripe.Subscription): string {
  const ends = subscription.items.data.map((item) => item.current_period_end).filter((end) => end > 0);
  if (!ends.length) throw upstreamFailed("The payment processor answered a subscription without a period");
  return isoOfSeconds(Math.min(...ends));
}

export interface DowngradeScheduled {
  planTier: PlanTier;
  planStatus: "downgrade_scheduled";
  planPendingTier: PlanTier;
  planPendingEffectiveAt: string;
}

/**
 * POST /api/clients/{clientId}/billing/downgrade: a lower tier from the end of the current
 * period. `basic` cancels the subscription at the period's end; a lower paid tier changes the
 * subscription's price without proration (the next invoice is the new price). The client becomes
 * `downgrade_scheduled` with `planPendingTier` and `planPendingEffectiveAt` (the period's end);
 * the tier itself changes when the webhook sees the period end.
 */
export async function scheduleDowngrade(
  member: ClientAccess,
  planTier: PlanTier,
): Promise<DowngradeScheduled> {
  const config = await requireConfig(member.clientId);
  requireSelfBilled(config);
  const tier = planTierOf(config.planTier);
  const status = planStatusOf(config.planStatus);
  if (status === "expired") throw conflict("The plan has expired: the client is on basic limits already");
  if (status === "payment_failed")
    throw conflict(
      "A payment failed: update the payment method in the Billing Portal before changing the plan",
    );
  if (rankOf(planTier) >= rankOf(tier))
    throw conflict(
      planTier === tier
        ? `The client is already on the ${planTier} plan`
        : `The ${planTier} plan is above the current ${tier} plan: upgrade with Checkout instead (POST /api/clients/{clientId}/billing/checkout)`,
    );
  const price = planTier === "basic" ? undefined : priceOfTier(planTier);
  if (planTier !== "basic" && !price)
    throw badRequest(`The ${planTier} plan cannot be bought online; contact the operator`);
  const customer = requireCustomer(config);
  const stripe = await processor();
  const subscription = await currentSubscription(stripe, customer, member.clientId);
  if (!subscription)
    throw conflict("The client has no active subscription with the payment processor; ask an operator");
  const effectiveAt = periodEndOf(subscription);
  const metadata = { clientId: member.clientId, pendingPlanTier: planTier, pendingEffectiveAt: effectiveAt };
  const item = subscription.items.data[0];
  await call("update a subscription", { clientId: member.clientId, subscriptionId: subscription.id }, () =>
    stripe.subscriptions.update(
      subscription.id,
      price && item
        ? {
            cancel_at_period_end: false,
            proration_behavior: "none",
            items: [{ id: item.id, price }],
            metadata,
          }
        : { cancel_at_period_end: true, metadata },
    ),
  );
  try {
    const pending = { planStatus: "downgrade_scheduled", planPendingTier: planTier } as const;
    const day = effectiveAt.slice(0, 10);
    await storePending(
      member.clientId,
      { tier, statuses: ["active", "upgrade_requested", "downgrade_scheduled"] },
      { ...pending, planPendingEffectiveAt: effectiveAt },
      isTransition(config, pending)
        ? {
            title: `Downgrade to ${planTier} scheduled`,
            message:
              planTier === "basic"
                ? `The subscription ends at the end of the current period, on ${day}; the client then has the basic plan's limits. Until then the ${tier} plan's limits apply.`
                : `The plan changes from ${tier} to ${planTier} at the end of the current period, on ${day}. Until then the ${tier} plan's limits apply.`,
          }
        : undefined,
    );
  } catch (error) {
    // The subscription was changed already: say so, for whoever reconciles it with the plan.
    log.warn("Subscription changed for a downgrade, but the plan was not recorded", {
      clientId: member.clientId,
      subscriptionId: subscription.id,
      planTier,
      ...describeError(error),
    });
    throw error;
  }
  log.info("Downgrade scheduled", { clientId: member.clientId, planTier, effectiveAt });
  return {
    planTier: tier,
    planStatus: "downgrade_scheduled",
    planPendingTier: planTier,
    planPendingEffectiveAt: effectiveAt,
  };
}

/** POST /api/clients/{clientId}/billing/portal: a Billing Portal session for the client's customer. */
export async function openBillingPortal(member: ClientAccess): Promise<{ url: string }> {
  const config = await requireConfig(member.clientId);
  requireSelfBilled(config);
  const customer = requireCustomer(config);
  const stripe = await processor();
  const session = await call("create a Billing Portal session", { clientId: member.clientId }, () =>
    stripe.billingPortal.sessions.create({ customer, return_url: clientBillingUrl(member.clientId) }),
  );
  return { url: session.url };
}

export interface ApiInvoice {
  invoiceId: string;
  number: string | null;
  status: string | null;
  currency: string;
  amountDue: number;
  amountPaid: number;
  total: number;
  created: string;
  periodStart: string;
  periodEnd: string;
  hostedInvoiceUrl: string | null;
  invoicePdf: string | null;
}

const toApiInvoice = (invoice: Stripe.Invoice): ApiInvoice => ({
  invoiceId: invoice.id ?? "",
  number: invoice.number ?? null,
  status: invoice.status ?? null,
  currency: invoice.currency,
  // The processor's amounts are in the currency's smallest unit; the API answers units (dollars).
  amountDue: invoice.amount_due / 100,
  amountPaid: invoice.amount_paid / 100,
  total: invoice.total / 100,
  created: isoOfSeconds(invoice.created),
  periodStart: isoOfSeconds(invoice.period_start),
  periodEnd: isoOfSeconds(invoice.period_end),
  hostedInvoiceUrl: invoice.hosted_invoice_url ?? null,
  invoicePdf: invoice.invoice_pdf ?? null,
});

/**
 * GET /api/clients/{clientId}/billing/invoices: the customer's invoices from the processor, newest
 * first, `limit` at a time (at most 100), continued after the last one shown (`startingAfter`).
 * A client with no customer record (or no processor configured) has none.
 */
export async function listInvoices(
  member: ClientAccess,
  page: { limit: number; startingAfter?: string },
): Promise<{ invoices: ApiInvoice[]; hasMore: boolean; nextStartingAfter: string | null }> {
  const config = await requireConfig(member.clientId);
  const stripe = await paymentClient();
  if (!config.paymentCustomerId || !stripe) return { invoices: [], hasMore: false, nextStartingAfter: null };
  const customer = config.paymentCustomerId;
  const list = await call("list invoices", { clientId: member.clientId }, async () => {
    try {
      return await stripe.invoices.list({
        customer,
        limit: page.limit,
        ...(page.startingAfter ? { starting_after: page.startingAfter } : {}),
      });
    } catch (error) {
      // The cursor names no invoice of this customer: the caller's to fix.
      if (page.startingAfter && (error as { statusCode?: number }).statusCode === 404)
        throw validationFailed([{ field: "startingAfter", problem: "no such invoice" }]);
      throw error;
    }
  });
  const invoices = list.data.map(toApiInvoice);
  return {
    invoices,
    hasMore: list.has_more,
    nextStartingAfter: list.has_more ? (invoices.at(-1)?.invoiceId ?? null) : null,
  };
}

/**
 * POST /api/msps/{mspId}/billing/payment-method: Checkout in setup mode for the MSP's customer.
 * The processor collects the payment method; the webhook makes it the customer's default, which
 * rule 4 of spec 4.14 then finds.
 */
export async function startMspPaymentMethodSetup(access: MspAccess): Promise<CheckoutStarted> {
  const found = await findMspWithConfig(access.mspId);
  if (!found?.config) throw notFound(MSP_NOT_FOUND);
  const customer = found.config.paymentCustomerId;
  if (!customer) throw conflict("The MSP has no customer record with the payment processor; ask an operator");
  const stripe = await processor();
  const metadata = { mspId: access.mspId, purpose: "msp_payment_method", requestedBy: access.userId };
  const session = await call("create a setup Checkout Session", { mspId: access.mspId }, () =>
    stripe.checkout.sessions.create({
      mode: "setup",
      customer,
      currency: SETUP_CURRENCY,
      client_reference_id: access.mspId,
      success_url: mspBillingUrl(access.mspId, "success"),
      cancel_url: mspBillingUrl(access.mspId, "cancelled"),
      metadata,
      setup_intent_data: { metadata: { mspId: access.mspId } },
    }),
  );
  log.info("Payment-method setup started", { mspId: access.mspId, checkoutSessionId: session.id });
  return started(session);
}

/** A client's plan and billing as its members see them (the console's Billing page). */
export interface ClientBilling {
  planTier: PlanTier;
  planStatus: PlanStatus;
  planPendingTier: PlanTier | null;
  planPendingEffectiveAt: string | null;
  planExpiresAt: string | null;
  planRenewedAt: string | null;
  billingTo: "client" | "msp";
  billingStatus: "active" | "suspended";
  /** When a failing payment started (`payment_failed`), and when the billing is suspended. */
  paymentFailedAt: string | null;
  suspendsAt: string | null;
  /** Requests per minute the plan grants, per API token and per proxy credential (section 8). */
  requestsPerMinute: number;
  /** The paid tiers sold online (a configured price), in ascending order. */
  tiersForSale: PlanTier[];
  /** Set by a system administrator (lib/domain/feature-overrides.ts, docs/billing.md "Overrides"). */
  featureOverrides: string[];
  promoOverrides: string[];
}

export async function getClientBilling(member: ClientAccess): Promise<ClientBilling> {
  const config = await requireConfig(member.clientId);
  const planTier = planTierOf(config.planTier);
  const planStatus = planStatusOf(config.planStatus);
  const { graceDays } = billingSettings();
  const failedAt = config.planPaymentFailedAt ?? null;
  const failedMs = failedAt ? Date.parse(failedAt) : Number.NaN;
  return {
    planTier,
    planStatus,
    planPendingTier: config.planPendingTier ? planTierOf(config.planPendingTier) : null,
    planPendingEffectiveAt: config.planPendingEffectiveAt ?? null,
    planExpiresAt: config.planExpiresAt ?? null,
    planRenewedAt: config.planRenewedAt ?? null,
    billingTo: config.billingTo === "msp" ? "msp" : "client",
    billingStatus: effectiveBillingStatus(
      { billingStatus: config.billingStatus, paymentFailedAt: failedAt },
      now(),
      graceDays,
    ),
    paymentFailedAt: failedAt,
    suspendsAt: Number.isFinite(failedMs) ? new Date(failedMs + graceDays * 86_400_000).toISOString() : null,
    requestsPerMinute: rateLimitForPlan({ planTier, planStatus, limits: config.limits }),
    tiersForSale: PLAN_TIERS.filter((tier) => tier !== "basic" && priceOfTier(tier) !== undefined),
    featureOverrides: [...config.featureOverrides],
    promoOverrides: [...config.promoOverrides],
  };
}
