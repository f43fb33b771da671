/**
 * The configuration record every client gets (spec 2.14, the fields that apply to a client).
 * Later issues read it: plan limits, billing suspension, MSP management, region access.
 */
import { billingKeys } from "#lib/db/entities/billing.ts";
import type { CustomerProvisioning } from "./payments.ts";

export function defaultClientConfiguration(input: {
  clientId: string;
  regions: readonly string[];
  createdAt: string;
  payment: CustomerProvisioning;
  billingTo?: "client" | "msp";
  mspId?: string | null;
}) {
  return {
    configurationType: "client",
    clientId: input.clientId,
    mspId: input.mspId ?? null,
    planTier: "basic",
    planStatus: "active",
    planPendingTier: null,
    planPendingInvoiceId: null,
    planPendingEffectiveAt: null,
    planExpiresAt: null,
    planRenewedAt: null,
    planBillingAnchor: input.createdAt,
    planStripeInvoiceId: null,
    billingType: "stripe",
    billingStatus: "active",
    billingTo: input.billingTo ?? "client",
    topUpMethod: "manual",
    regionAccess: [...input.regions],
    sharing: { proxyCredentials: false, targetCredentials: false, targets: false, proxies: false },
    limits: { requestsPerMinute: null, requestsPerDay: null },
    budget: { current: 0, minimumTopUpThreshold: 5, maximumTopUpThreshold: 20 },
    rates: { apiSeconds: 1, storageGB: 1, aiTokens: 1, plan: 1 },
    topUpSequence: 0,
    automaticTopUpFailedAt: null,
    featureOverrides: [],
    promoOverrides: [],
    ...input.payment,
    // The Stripe webhook's way from the customer to the client (GSI1, docs/billing.md).
    ...(input.payment.paymentCustomerId
      ? billingKeys.clientByPaymentCustomerIndex(input.payment.paymentCustomerId, input.clientId)
      : {}),
    configCreated: input.createdAt,
    configUpdated: input.createdAt,
  };
}
export type ClientConfiguration = ReturnType<typeof defaultClientConfiguration>;
