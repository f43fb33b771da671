/**
 * Stripe's webhook events applied to a client's plan (docs/billing.md): verified on the raw body
 * with the endpoint's signing secret, each event id applied once (a marker item put in the same
 * transaction as the plan update and its notification), the client found by the Stripe customer
 * (GSI1), the transition decided by lib/domain/plan-states.ts. After the transaction the runtime
 * items of every region follow (a warm data plane reloads on its next request) and the owners get
 * an e-mail. The completion of an upgrade from a paid tier then cancels the subscription it
 * replaced; the completion of an MSP's setup-mode Checkout is the MSP's payment method instead
 * (lib/domain/msp-payment-method.ts).
 */
import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { sdkCallBounds } from "#lib/aws/clients.ts";
import {
  type ClientConfigItem,
  clientConfigKeys,
  findClientConfig,
  findClientIdByPaymentCustomer,
} from "#lib/db/entities/client-config.ts";
import { syncClientRuntime } from "#lib/db/entities/client-runtime.ts";
import type { NotificationItem } from "#lib/db/entities/notification.ts";
import { commitSteps, nowIso, setExpression, type TransactionStep, tableName } from "#lib/db/store.ts";
import { describeError, log } from "#lib/log.ts";
import { badRequest, serviceUnavailable } from "#lib/shared/errors.ts";
import { billingNotice, emailOwners } from "./billing-notices.ts";
import { billingSettings } from "./billing-settings.ts";
import {
  applyMspPaymentMethod,
  isMspPaymentMethodSetup,
  type MspPaymentMethodOutcome,
} from "./msp-payment-method.ts";
import { paymentClient } from "./payments.ts";
import {
  type BillingEvent,
  customerOf,
  HANDLED_EVENT_TYPES,
  invoiceMismatch,
  nextPlanState,
  type PlanFields,
} from "./plan-states.ts";
import { MARKER, markerStep, markOnly } from "./stripe-event-marker.ts";
import { MALFORMED_EVENT, parseStripeEvent } from "./stripe-event-schema.ts";

export { STRIPE_EVENT_MARKER_DAYS } from "./stripe-event-marker.ts";
export const BAD_SIGNATURE = "Invalid Stripe signature";

let signingSecret: Promise<string | undefined> | undefined;

/** The endpoint's signing secret: STRIPE_WEBHOOK_SECRET, or the Secrets Manager secret (read once). */
function webhookSecret(): Promise<string | undefined> {
  signingSecret ??= (async () => {
    const { webhookSecret, webhookSecretArn } = billingSettings();
    if (webhookSecret) return webhookSecret;
    if (!webhookSecretArn) return undefined;
    const secret = await new SecretsManagerClient(sdkCallBounds()).send(
      new GetSecretValueCommand({ SecretId: webhookSecretArn }),
    );
    return secret.SecretString?.trim() || undefined;
  })().catch((error) => {
    signingSecret = undefined;
    throw error;
  });
  return signingSecret;
}

/** Forget the cached secret (tests change the configuration). */
export function resetWebhookSecret(): void {
  signingSecret = undefined;
}

/**
 * The event in `rawBody`, verified against the `Stripe-Signature` header with the signing secret
 * (`stripe.webhooks.constructEvent`), then its shape checked (lib/domain/stripe-event-schema.ts)
 * before any field is read. A missing or bad signature is a 400; a signed body that is not JSON,
 * or not an event the service can apply, a 400 `Malformed Stripe event: <field>: <problem>`
 * (logged); no secret configured, a 503 (Stripe retries). Nothing is written before this passes.
 */
export async function verifyStripeEvent(
  rawBody: string | undefined,
  signature: string | undefined,
): Promise<BillingEvent> {
  if (!signature || rawBody === undefined)
    throw badRequest(`${BAD_SIGNATURE}: the Stripe-Signature header is missing`);
  const secret = await webhookSecret();
  if (!secret) throw serviceUnavailable("The Stripe webhook is not configured");
  const { default: Stripe } = await import("stripe");
  let parsed: unknown;
  try {
    parsed = Stripe.webhooks.constructEvent(rawBody, signature, secret);
  } catch (error) {
    // The signature held but the body is no JSON document (the package parses it after verifying).
    if (error instanceof SyntaxError) throw malformed(badRequest(`${MALFORMED_EVENT}: the body is not JSON`));
    throw badRequest(`${BAD_SIGNATURE}: ${error instanceof Error ? error.message : "verification failed"}`);
  }
  try {
    return parseStripeEvent(parsed);
  } catch (error) {
    throw malformed(error, parsed);
  }
}

/** A signed event refused for its shape: logged (its id and type when it has them, never the body). */
function malformed(error: unknown, parsed?: unknown): unknown {
  const envelope = parsed && typeof parsed === "object" ? (parsed as Record<string, unknown>) : {};
  const text = (value: unknown) => (typeof value === "string" ? value.slice(0, 255) : undefined);
  log.warn("Signed Stripe event refused: malformed", {
    eventId: text(envelope.id),
    eventType: text(envelope.type),
    reason: error instanceof Error ? error.message.slice(0, 1000) : String(error),
  });
  return error;
}

const planFieldsOf = (config: ClientConfigItem): PlanFields => ({
  planTier: config.planTier,
  planStatus: config.planStatus,
  planPendingTier: config.planPendingTier,
  planPendingEffectiveAt: config.planPendingEffectiveAt,
  planExpiresAt: config.planExpiresAt,
  planRenewedAt: config.planRenewedAt,
  planBillingAnchor: config.planBillingAnchor,
  planStripeInvoiceId: config.planStripeInvoiceId,
  billingStatus: config.billingStatus,
  planPaymentFailedAt: config.planPaymentFailedAt,
  planSubscriptionId: config.planSubscriptionId,
  planStateAt: config.planStateAt,
  planPeriodStart: config.planPeriodStart,
});

/** The plan settings the data plane reads, copied to every region (configVersion + 1). */
async function syncRuntime(clientId: string, plan: PlanFields): Promise<void> {
  await syncClientRuntime(clientId, {
    planTier: plan.planTier,
    planStatus: plan.planStatus,
    billingStatus: plan.billingStatus,
    suspendAt: plan.planPaymentFailedAt
      ? Date.parse(plan.planPaymentFailedAt) + billingSettings().graceDays * 86_400_000
      : null,
  });
}

export type StripeEventOutcome =
  | { outcome: "applied"; clientId: string; notified: boolean; plan: PlanFields }
  | { outcome: "unchanged" | "duplicate"; clientId?: string }
  | { outcome: "ignored"; reason: string; clientId?: undefined };

const UPDATE_PLAN = "updatePlan";

/** A repeated event: the runtime items again (idempotent), in case the first delivery stopped after its transaction. */
async function duplicate(clientId: string | undefined): Promise<StripeEventOutcome> {
  if (clientId) {
    const config = await findClientConfig(clientId);
    if (config) await syncRuntime(clientId, planFieldsOf(config));
  }
  return { outcome: "duplicate", clientId };
}

/** Apply one verified event; see docs/billing.md. */
export async function handleStripeEvent(
  event: BillingEvent,
): Promise<StripeEventOutcome | MspPaymentMethodOutcome> {
  // An MSP's setup-mode Checkout: its payment method, no plan.
  if (isMspPaymentMethodSetup(event)) return applyMspPaymentMethod(event);
  const result = await applyPlanEvent(event);
  // An upgrade from a paid tier: the subscription it replaces ends (a redelivery finishes the job).
  if (event.type === "checkout.session.completed" && result.outcome !== "ignored" && result.clientId)
    await cancelReplacedSubscriptions(event, result.clientId);
  return result;
}

/** The event's change of the client's plan (the state machine's transition), once. */
async function applyPlanEvent(event: BillingEvent): Promise<StripeEventOutcome> {
  if (!(HANDLED_EVENT_TYPES as readonly string[]).includes(event.type)) {
    if (!(await markOnly(event))) return { outcome: "duplicate" };
    return { outcome: "ignored", reason: `${event.type} is not handled` };
  }
  const customerId = customerOf(event);
  const clientId = customerId ? await findClientIdByPaymentCustomer(customerId) : undefined;
  if (!clientId) {
    if (!(await markOnly(event))) return { outcome: "duplicate" };
    return { outcome: "ignored", reason: customerId ? "no client has this customer" : "no customer" };
  }
  // A concurrent event for the same client moves planStateAt: read again and decide again.
  for (let attempt = 1; ; attempt++) {
    const config = await findClientConfig(clientId);
    if (!config) {
      if (!(await markOnly(event, { clientId }))) return { outcome: "duplicate", clientId };
      return { outcome: "ignored", reason: "the client has no configuration" };
    }
    const current = planFieldsOf(config);
    const transition = nextPlanState(current, event);
    if (!transition) {
      if (!(await markOnly(event, { clientId }))) return duplicate(clientId);
      const mismatch = invoiceMismatch(current, event);
      if (mismatch)
        log.info("Stripe invoice event left the plan unchanged", {
          eventId: event.id,
          eventType: event.type,
          clientId,
          reason: mismatch,
        });
      return { outcome: "unchanged", clientId };
    }
    const now = nowIso();
    const update = setExpression({ ...transition.changes, configUpdated: now });
    const steps: TransactionStep[] = [
      markerStep(event, { clientId }),
      {
        name: UPDATE_PLAN,
        action: {
          Update: {
            TableName: tableName(),
            Key: clientConfigKeys.item(clientId),
            ...update,
            ExpressionAttributeNames: { ...update.ExpressionAttributeNames, "#at": "planStateAt" },
            ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ":at": current.planStateAt },
            ConditionExpression:
              current.planStateAt === null
                ? "attribute_exists(pKey) AND (attribute_not_exists(#at) OR #at = :at)"
                : "attribute_exists(pKey) AND #at = :at",
          },
        },
      },
    ];
    let notification: NotificationItem | undefined;
    if (transition.notify) {
      const notice = billingNotice(clientId, transition, now);
      notification = notice.notification;
      steps.push(notice.step);
    }
    const cancelled = await commitSteps<"duplicate" | "moved">(steps, {
      attempts: 3,
      cancelled: ({ failed }) =>
        failed.includes(MARKER) ? "duplicate" : failed.includes(UPDATE_PLAN) ? "moved" : undefined,
    });
    if (cancelled === "duplicate") return duplicate(clientId);
    if (cancelled === "moved") {
      if (attempt >= 5) throw serviceUnavailable("The client's plan is changing: try again");
      continue;
    }
    const plan = { ...current, ...transition.changes };
    await syncRuntime(clientId, plan);
    if (notification) await emailOwners(clientId, notification);
    return { outcome: "applied", clientId, notified: Boolean(notification), plan };
  }
}

/** How a replaced subscription ends (docs/billing.md "Upgrade from a paid tier"). */
export const REPLACED_SUBSCRIPTION_CANCEL = { prorate: true, invoice_now: true } as const;

/**
 * After a Checkout in subscription mode completed: every other live subscription of the client's
 * customer (its metadata names this client, or no client) is cancelled at the processor at once,
 * its unused time credited (`prorate`, invoiced now: the credit goes to the customer's balance and
 * is taken off the next invoice). Only when the session's subscription is the one the plan follows
 * now (a late completion of an older Checkout cancels nothing). Each cancellation carries an
 * idempotency key, and a cancelled subscription is no longer listed, so a redelivered event cancels
 * nothing twice. A processor that fails is a 503: Stripe delivers the event again, and that
 * (duplicate) delivery finishes the job.
 */
async function cancelReplacedSubscriptions(event: BillingEvent, clientId: string): Promise<void> {
  const session = event.data.object;
  if (session.mode !== "subscription") return;
  const subscription = session.subscription;
  const current =
    typeof subscription === "string"
      ? subscription
      : typeof (subscription as { id?: unknown } | null)?.id === "string"
        ? (subscription as { id: string }).id
        : undefined;
  if (!current) return;
  const config = await findClientConfig(clientId);
  if (!config?.paymentCustomerId || config.planSubscriptionId !== current) return;
  const customer = config.paymentCustomerId;
  const stripe = await paymentClient();
  if (!stripe) return;
  const context = { clientId, subscriptionId: current, eventId: event.id };
  try {
    const { data } = await stripe.subscriptions.list({ customer, limit: 100 });
    const replaced = data.filter(
      (other) =>
        other.id !== current &&
        !["canceled", "incomplete_expired"].includes(other.status) &&
        (!other.metadata?.clientId || other.metadata.clientId === clientId),
    );
    for (const other of replaced) {
      await stripe.subscriptions.cancel(other.id, REPLACED_SUBSCRIPTION_CANCEL, {
        idempotencyKey: `replaced-subscription-${other.id}`,
      });
      log.info("Replaced subscription cancelled", { ...context, replacedSubscriptionId: other.id });
    }
  } catch (error) {
    log.warn("Could not cancel the subscription an upgrade replaced", {
      ...context,
      ...describeError(error),
    });
    throw serviceUnavailable(
      "The payment processor could not be reached; the event is to be delivered again",
    );
  }
}
