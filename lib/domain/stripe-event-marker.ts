/**
 * The marker that makes each Stripe event apply once (docs/billing.md "Order and repetition"): an
 * item `STRIPEEVENT#<event id>` / `EVENT`, put with `attribute_not_exists` in the same transaction
 * as what the event changes, kept 30 days (Stripe retries for up to 3). Shared by the plan's events
 * (lib/domain/billing-events.ts) and the MSP's payment method (lib/domain/msp-payment-method.ts).
 */
import { GetCommand } from "#lib/aws/document-client.ts";
import { billingKeys } from "#lib/db/entities/billing.ts";
import { commitSteps, homeDb, nowIso, type TransactionStep, tableName } from "#lib/db/store.ts";
import type { BillingEvent } from "./plan-states.ts";

/** How long a handled event's marker is kept (Stripe retries for up to 3 days). */
export const STRIPE_EVENT_MARKER_DAYS = 30;
/** The marker's step name: a cancellation naming it means the event was handled before. */
export const MARKER = "putEventMarker";

/** The marker's put, for the transaction that applies the event. */
export function markerStep(
  event: BillingEvent,
  owner: { clientId?: string; mspId?: string },
): TransactionStep {
  return {
    name: MARKER,
    action: {
      Put: {
        TableName: tableName(),
        Item: {
          ...billingKeys.stripeEvent(event.id),
          entity: "stripeEvent",
          eventType: event.type,
          ...(owner.clientId ? { clientId: owner.clientId } : {}),
          ...(owner.mspId ? { mspId: owner.mspId } : {}),
          handledAt: nowIso(),
          TTL: Math.floor(Date.now() / 1000) + STRIPE_EVENT_MARKER_DAYS * 86_400,
        },
        ConditionExpression: "attribute_not_exists(pKey)",
      },
    },
  };
}

/** Only the marker: true when this call wrote it, false when the event was handled before. */
export async function markOnly(
  event: BillingEvent,
  owner: { clientId?: string; mspId?: string } = {},
): Promise<boolean> {
  const outcome = await commitSteps<"duplicate">([markerStep(event, owner)], {
    cancelled: ({ failed }) => (failed.includes(MARKER) ? "duplicate" : undefined),
  });
  return outcome !== "duplicate";
}

/** Whether the event was handled already (a consistent read of its marker). */
export async function wasHandled(event: BillingEvent): Promise<boolean> {
  const found = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: billingKeys.stripeEvent(event.id), ConsistentRead: true }),
  );
  return Boolean(found.Item);
}
