/**
 * The billing settings of the Stripe webhook and dunning (docs/billing.md), read from the
 * environment on each call (tests change it). Not in lib/config.ts: the data plane's cold start
 * loads that module, and these settings are not the data plane's (its runtime item carries the
 * time the grace period ends).
 */
import * as z from "zod/mini";
import { DEFAULT_BILLING_GRACE_DAYS } from "./dunning.ts";

const BillingEnv = z.object({
  /** The Stripe webhook endpoint's signing secret (`whsec_...`), locally. */
  STRIPE_WEBHOOK_SECRET: z.optional(z.string().check(z.minLength(1))),
  /** In AWS: the Secrets Manager secret holding it (stripeWebhookSecretArn of the CDK app). */
  STRIPE_WEBHOOK_SECRET_ARN: z.optional(z.string().check(z.minLength(1))),
  /** Days a client stays in `payment_failed` before its billing is suspended. */
  BILLING_GRACE_DAYS: z._default(
    z.coerce.number().check(z.minimum(0), z.maximum(365)),
    DEFAULT_BILLING_GRACE_DAYS,
  ),
});

export interface BillingSettings {
  webhookSecret?: string;
  webhookSecretArn?: string;
  graceDays: number;
}

export function billingSettings(): BillingSettings {
  const parsed = BillingEnv.safeParse(process.env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`Invalid configuration: ${problems}`);
  }
  return {
    webhookSecret: parsed.data.STRIPE_WEBHOOK_SECRET,
    webhookSecretArn: parsed.data.STRIPE_WEBHOOK_SECRET_ARN,
    graceDays: parsed.data.BILLING_GRACE_DAYS,
  };
}
