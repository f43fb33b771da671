/**
 * An MSP's payment method from Checkout in setup mode (issue 24; docs/billing.md "An MSP's payment
 * method"). `startMspPaymentMethodSetup` (lib/domain/billing.ts) creates the session with metadata
 * purpose `msp_payment_method` and the mspId; when the processor reports it complete
 * (`checkout.session.completed`, mode `setup`), the webhook reads the session's SetupIntent for
 * its payment method, makes it the MSP customer's default (`invoice_settings.default_payment_method`,
 * what the top-ups charge) and records on the MSP's configuration that a payment method is on file
 * (`paymentMethodOnFile`, `paymentMethodUpdated`), which rule 4 of spec 4.14 reads.
 *
 * Once per event id (the marker, in the transaction that records it), and never backwards: the
 * event's `created` is stored (`paymentMethodEventAt`) and an older completion (a replaced method)
 * changes nothing, at the processor or here. A processor that cannot be reached is a 503: nothing is
 * recorded and Stripe delivers the event again.
 */
import { findMspWithConfig, mspKeys } from "#lib/db/entities/msp.ts";
import { commitSteps, nowIso, type TransactionStep, tableName } from "#lib/db/store.ts";
import { describeError, log } from "#lib/log.ts";
import { serviceUnavailable } from "#lib/shared/errors.ts";
import { paymentClient } from "./payments.ts";
import type { BillingEvent } from "./plan-states.ts";
import { MARKER, markerStep, markOnly, wasHandled } from "./stripe-event-marker.ts";

/** The metadata `purpose` of an MSP's setup-mode Checkout. */
export const MSP_PAYMENT_METHOD_PURPOSE = "msp_payment_method";

const text = (value: unknown): string | null => (typeof value === "string" && value ? value : null);
const record = (value: unknown): Record<string, unknown> =>
  value && typeof value === "object" ? (value as Record<string, unknown>) : {};
/** A field that is an id, or an expanded object with one. */
const idOf = (value: unknown): string | null => text(value) ?? text(record(value).id);

/** Whether the event is the completion of an MSP's setup-mode Checkout. */
export function isMspPaymentMethodSetup(event: BillingEvent): boolean {
  const session = event.data.object;
  return (
    event.type === "checkout.session.completed" &&
    session.mode === "setup" &&
    record(session.metadata).purpose === MSP_PAYMENT_METHOD_PURPOSE
  );
}

export type MspPaymentMethodOutcome =
  | { outcome: "applied"; mspId: string; paymentMethodId: string }
  | { outcome: "unchanged" | "duplicate"; mspId?: string }
  | { outcome: "ignored"; reason: string };

const RECORD = "recordPaymentMethod";

async function ignored(event: BillingEvent, mspId: string | undefined, reason: string) {
  if (!(await markOnly(event, { mspId }))) return { outcome: "duplicate" as const, mspId };
  log.info("MSP payment-method event ignored", { eventId: event.id, mspId, reason });
  return { outcome: "ignored" as const, reason };
}

/** Apply a verified `checkout.session.completed` of an MSP's setup-mode Checkout. */
export async function applyMspPaymentMethod(event: BillingEvent): Promise<MspPaymentMethodOutcome> {
  const session = event.data.object;
  const mspId = text(record(session.metadata).mspId) ?? text(session.client_reference_id) ?? undefined;
  const customer = idOf(session.customer);
  // A redelivery must not set an older method as the default again: look before the processor.
  if (await wasHandled(event)) return { outcome: "duplicate", mspId };
  const found = mspId ? await findMspWithConfig(mspId) : undefined;
  if (!mspId || !found?.config) return ignored(event, mspId, "no such MSP");
  const config = found.config;
  if (!customer || config.paymentCustomerId !== customer)
    return ignored(event, mspId, "the session's customer is not the MSP's");
  if (config.paymentMethodEventAt !== null && event.created < config.paymentMethodEventAt) {
    if (!(await markOnly(event, { mspId }))) return { outcome: "duplicate", mspId };
    return { outcome: "unchanged", mspId };
  }
  const setupIntentId = idOf(session.setup_intent);
  if (!setupIntentId) return ignored(event, mspId, "the session has no setup intent");
  const stripe = await paymentClient();
  if (!stripe) throw serviceUnavailable("No payment processor is configured");
  const context = { mspId, setupIntentId, eventId: event.id };
  let paymentMethodId: string | null;
  try {
    const intent = await stripe.setupIntents.retrieve(setupIntentId);
    if (intent.status !== "succeeded") return ignored(event, mspId, `the setup intent is ${intent.status}`);
    if (intent.customer && idOf(intent.customer) !== customer)
      return ignored(event, mspId, "the setup intent is another customer's");
    paymentMethodId = idOf(intent.payment_method);
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404)
      return ignored(event, mspId, "no such setup intent");
    log.warn("Payment processor failed: retrieve a setup intent", { ...context, ...describeError(error) });
    throw serviceUnavailable("The payment processor could not be reached; try again");
  }
  if (!paymentMethodId) return ignored(event, mspId, "the setup intent has no payment method");
  try {
    await stripe.customers.update(customer, {
      invoice_settings: { default_payment_method: paymentMethodId },
    });
  } catch (error) {
    log.warn("Payment processor failed: set the default payment method", {
      ...context,
      ...describeError(error),
    });
    throw serviceUnavailable("The payment processor could not be reached; try again");
  }
  const now = nowIso();
  const steps: TransactionStep[] = [
    markerStep(event, { mspId }),
    {
      name: RECORD,
      action: {
        Update: {
          TableName: tableName(),
          Key: mspKeys.config(mspId),
          UpdateExpression:
            "SET paymentMethodOnFile = :true, paymentMethodUpdated = :now, paymentMethodEventAt = :created, configUpdated = :now",
          ConditionExpression:
            "attribute_exists(pKey) AND (attribute_not_exists(paymentMethodEventAt) OR paymentMethodEventAt = :null OR paymentMethodEventAt <= :created)",
          ExpressionAttributeValues: { ":true": true, ":now": now, ":created": event.created, ":null": null },
        },
      },
    },
  ];
  const cancelled = await commitSteps<"duplicate" | "stale">(steps, {
    attempts: 3,
    cancelled: ({ failed }) =>
      failed.includes(MARKER) ? "duplicate" : failed.includes(RECORD) ? "stale" : undefined,
  });
  if (cancelled === "duplicate") return { outcome: "duplicate", mspId };
  if (cancelled === "stale") {
    // A newer method was recorded meanwhile (its event set the processor's default after this one).
    if (!(await markOnly(event, { mspId }))) return { outcome: "duplicate", mspId };
    return { outcome: "unchanged", mspId };
  }
  log.info("MSP payment method on file", { mspId, checkoutSessionId: idOf(session.id) ?? undefined });
  return { outcome: "applied", mspId, paymentMethodId };
}
