/**
 * The Stripe webhook's items (docs/billing.md). Their key builders live here, not in
 * lib/db/keys.ts, to keep them off the data plane's cold start (as `passkeyKeys` do).
 * - A handled event's marker, `STRIPEEVENT#<eventId>` / `EVENT` (TTL 30 days): each event id is
 *   applied once (lib/domain/billing-events.ts writes it in the plan update's transaction).
 * - GSI1 keys on a client configuration with a payment customer, `PAYMENTCUSTOMER#<customerId>` /
 *   `CLIENT#<clientId>`: the webhook finds the client by the event's customer.
 */
import type { Key } from "#lib/db/keys.ts";

export const billingKeys = {
  stripeEvent: (eventId: string): Key => ({ pKey: `STRIPEEVENT#${eventId}`, sKey: "EVENT" }),
  clientByPaymentCustomerIndex: (customerId: string, clientId: string) => ({
    gsi1pk: `PAYMENTCUSTOMER#${customerId}`,
    gsi1sk: `CLIENT#${clientId}`,
  }),
} as const;
