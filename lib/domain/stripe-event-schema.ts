/**
 * The shape of a Stripe event the webhook accepts (docs/billing.md "The event's shape"), checked
 * after the signature and before any field is read: the envelope (`id`, `type`, `created`,
 * `data.object`) of every event, and for each type the service handles the fields of `data.object`
 * it reads, with their types. Fields it does not read are kept as they are (Stripe adds fields
 * with each API version); a field it reads that is present with another type is refused.
 *
 * A signed event that fails is a 400 naming the fields (`Malformed Stripe event: data.object.customer:
 * ...`): Stripe then retries it and shows the failure in its dashboard, and since nothing was
 * written (no marker), a corrected delivery of the same event id still applies.
 */
import { z } from "zod";
import { badRequest } from "#lib/shared/errors.ts";
import { type BillingEvent, HANDLED_EVENT_TYPES, type HandledEventType } from "./plan-states.ts";

/** The message every refusal of a signed event's shape starts with. */
export const MALFORMED_EVENT = "Malformed Stripe event";
/** Issues named in a refusal (the first ones, in the document's order). */
const MAX_ISSUES = 5;

/** A Stripe id (`evt_...`, `cus_...`): Stripe's are about 30 characters. */
const Id = z.string().min(1).max(255);
/** Seconds since the epoch. */
const Seconds = z.number().int().nonnegative();
/** A reference: the id, or the expanded object with its id; null when the object has none. */
const Ref = z
  .union([Id, z.looseObject({ id: Id })])
  .nullable()
  .optional();
/** Stripe's metadata: string values only. */
const Metadata = z.record(z.string(), z.string()).nullable().optional();

const SubscriptionItem = z.looseObject({
  price: z
    .looseObject({
      id: Id.optional(),
      lookup_key: z.string().nullable().optional(),
      metadata: Metadata,
    })
    .nullable()
    .optional(),
  current_period_start: Seconds.nullable().optional(),
  current_period_end: Seconds.nullable().optional(),
});

/** What lib/domain/plan-states.ts reads of a subscription (`subscriptionView`). */
const SubscriptionObject = z.looseObject({
  id: Id,
  customer: Ref,
  status: z.string().min(1),
  cancel_at_period_end: z.boolean().nullable().optional(),
  metadata: Metadata,
  items: z.looseObject({ data: z.array(SubscriptionItem) }).optional(),
  current_period_start: Seconds.nullable().optional(),
  current_period_end: Seconds.nullable().optional(),
  billing_cycle_anchor: Seconds.nullable().optional(),
  latest_invoice: Ref,
});

/** What the plan (fromCheckout) and an MSP's payment method (msp-payment-method.ts) read of a session. */
const CheckoutSessionObject = z.looseObject({
  id: Id,
  mode: z.string().min(1),
  customer: Ref,
  // The id, or the subscription expanded (its anchor and period are read then).
  subscription: z.union([Id, SubscriptionObject]).nullable().optional(),
  invoice: Ref,
  metadata: Metadata,
  client_reference_id: z.string().nullable().optional(),
  setup_intent: Ref,
});

/** What fromInvoice reads of an invoice; its subscription under `subscription` or (API 2025-03-31 on) `parent`. */
const InvoiceObject = z.looseObject({
  id: Id,
  customer: Ref,
  subscription: Ref,
  parent: z
    .looseObject({
      subscription_details: z.looseObject({ subscription: Ref }).nullable().optional(),
    })
    .nullable()
    .optional(),
  lines: z
    .looseObject({
      data: z.array(
        z.looseObject({
          period: z.looseObject({ start: Seconds, end: Seconds }).nullable().optional(),
        }),
      ),
    })
    .optional(),
});

const OBJECT_OF_TYPE: Readonly<Record<HandledEventType, z.ZodType<Record<string, unknown>>>> = {
  "checkout.session.completed": CheckoutSessionObject,
  "customer.subscription.created": SubscriptionObject,
  "customer.subscription.updated": SubscriptionObject,
  "customer.subscription.deleted": SubscriptionObject,
  "invoice.paid": InvoiceObject,
  "invoice.payment_failed": InvoiceObject,
};

/** Every event: its id (the marker's key), type, time, and an object (not an array) under `data`. */
const Envelope = z.looseObject({
  id: Id,
  type: z.string().min(1).max(255),
  created: Seconds,
  data: z.looseObject({ object: z.looseObject({}) }),
});

/** `data.object.customer: expected string, received number` for each issue (at most MAX_ISSUES). */
function describeIssues(issues: readonly z.core.$ZodIssue[], prefix: (string | number)[] = []) {
  return issues.slice(0, MAX_ISSUES).map((issue) => {
    const path = [...prefix, ...issue.path.map((part) => (typeof part === "symbol" ? String(part) : part))];
    const field = path.length ? path.join(".") : "the event";
    return { field, problem: issue.message };
  });
}

function refused(issues: { field: string; problem: string }[], type?: string) {
  const list = issues.map((i) => `${i.field}: ${i.problem}`).join("; ");
  return badRequest(`${MALFORMED_EVENT}${type ? ` (${type})` : ""}: ${list}`, {
    fields: [...new Set(issues.map((i) => i.field))],
  });
}

/**
 * The event in `value` (the signed body, parsed) if its shape is one the service can apply;
 * otherwise a 400 (`validation` DomainError) naming what is wrong. Unknown keys are kept.
 */
export function parseStripeEvent(value: unknown): BillingEvent {
  const envelope = Envelope.safeParse(value);
  if (!envelope.success) throw refused(describeIssues(envelope.error.issues));
  const event = envelope.data;
  const schema = (HANDLED_EVENT_TYPES as readonly string[]).includes(event.type)
    ? OBJECT_OF_TYPE[event.type as HandledEventType]
    : undefined;
  if (!schema) return event as BillingEvent;
  const object = schema.safeParse(event.data.object);
  if (!object.success) throw refused(describeIssues(object.error.issues, ["data", "object"]), event.type);
  return { ...event, data: { ...event.data, object: object.data } } as BillingEvent;
}
