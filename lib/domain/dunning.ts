/**
 * Dunning, decided at read time (docs/billing.md): no scheduled job suspends a client; whoever
 * reads its billing status (the data plane on every request, the configuration view) compares the
 * stored start of its failing payments with the clock. No imports: it is in the data plane's
 * cold-start bundle.
 */

/** Default days a client stays in `payment_failed` before its billing is suspended. */
export const DEFAULT_BILLING_GRACE_DAYS = 7;

/**
 * The billing status in force at `nowMs` (decided at read time, docs/billing.md "Dunning"): the
 * stored one, or `suspended` once a payment has been failing for longer than the grace period.
 */
export function effectiveBillingStatus(
  fields: { billingStatus?: string; paymentFailedAt?: string | null },
  nowMs: number,
  graceDays: number = DEFAULT_BILLING_GRACE_DAYS,
): "active" | "suspended" {
  if (fields.billingStatus === "suspended") return "suspended";
  const failedAt = fields.paymentFailedAt ? Date.parse(fields.paymentFailedAt) : Number.NaN;
  return Number.isFinite(failedAt) && nowMs - failedAt >= graceDays * 86_400_000 ? "suspended" : "active";
}

/** What a suspended organisation is answered (402), on the data plane and the Core API alike. */
export const BILLING_SUSPENDED = {
  code: "billing-suspended",
  message: "Payment required: the account's billing is suspended",
} as const;

/**
 * Whether an organisation's billing is suspended at `nowMs`, from the billing fields of its runtime
 * item (lib/db/entities/client-runtime.ts, copied to every region): suspended by an operator, its
 * payments failing past the grace period's end (`suspendAt`, epoch ms), or billed to an MSP whose
 * billing is suspended. The one rule of the data plane's admission (402) and of every call the
 * Core API makes to the outside for the organisation (lib/domain/billing-suspension.ts).
 */
export function billingSuspended(
  runtime: { billingStatus: string; suspendAt: number | null; mspSuspended: boolean },
  nowMs: number,
): boolean {
  return (
    runtime.billingStatus === "suspended" ||
    (runtime.suspendAt !== null && runtime.suspendAt <= nowMs) ||
    runtime.mspSuspended
  );
}
