/**
 * The client configuration (spec 2.14, the fields that apply to a client) as stored: one item per
 * client, `CLIENT#<clientId>` / `CONFIG`, written with the client (lib/domain/client-config.ts has
 * its defaults). It carries the plan, the billing settings, the MSP link (`mspId`) and the
 * managed-client settings the MSP API changes (lib/domain/msp-clients.ts).
 */
import { z } from "zod";
import { GetCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import { homeDb, parseStored, queryAll, tableName } from "#lib/db/store.ts";
import { billingKeys } from "./billing.ts";

export const BILLING_TO = ["client", "msp"] as const;
export const TOP_UP_METHODS = ["automatic", "manual"] as const;

export const ClientRates = z.object({
  apiSeconds: z.number(),
  storageGB: z.number(),
  aiTokens: z.number(),
  plan: z.number(),
});

export const ClientSharing = z.object({
  proxyCredentials: z.boolean(),
  targetCredentials: z.boolean(),
  targets: z.boolean(),
  proxies: z.boolean(),
});
export type ClientSharing = z.infer<typeof ClientSharing>;

export const ClientConfigItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("clientConfig"),
  configurationType: z.literal("client"),
  clientId: z.string(),
  /** The MSP that manages the client; null when none (never managed, or detached). */
  mspId: z.string().nullable(),
  planTier: z.string(),
  planStatus: z.string(),
  planPendingTier: z.string().nullable(),
  planPendingInvoiceId: z.string().nullable(),
  planPendingEffectiveAt: z.string().nullable(),
  planExpiresAt: z.string().nullable(),
  planRenewedAt: z.string().nullable(),
  planBillingAnchor: z.string().nullable(),
  planStripeInvoiceId: z.string().nullable(),
  /** The plan state machine's own fields (lib/domain/plan-states.ts, docs/billing.md). */
  planPaymentFailedAt: z.string().nullable(),
  planSubscriptionId: z.string().nullable(),
  planStateAt: z.number().nullable(),
  planPeriodStart: z.number().nullable(),
  billingType: z.enum(["stripe", "marketplace", "invoice"]),
  billingStatus: z.enum(["active", "suspended"]),
  billingTo: z.enum(BILLING_TO),
  topUpMethod: z.enum(TOP_UP_METHODS),
  regionAccess: z.array(z.string()),
  sharing: ClientSharing,
  /**
   * An enterprise plan's item may hold only `requestsPerMinute` (spec 2.x: the enterprise limit);
   * a missing window is no limit.
   */
  limits: z.object({
    requestsPerMinute: z.number().nullable().default(null),
    requestsPerDay: z.number().nullable().default(null),
  }),
  budget: z.object({
    current: z.number(),
    minimumTopUpThreshold: z.number(),
    maximumTopUpThreshold: z.number(),
  }),
  rates: ClientRates,
  /**
   * The sequence number of the next top-up claim (`CLIENT#<id>` / `TOPUP#<n>`, lib/db/entities/budget.ts):
   * advanced when a claim is settled (charged or refused), so each top-up has its own claim and
   * idempotency key. Never in an answer.
   */
  topUpSequence: z.number().int().min(0),
  /** When the last automatic top-up charge was refused; automatic top-ups wait an hour after it. */
  automaticTopUpFailedAt: z.string().nullable(),
  featureOverrides: z.array(z.string()),
  promoOverrides: z.array(z.string()),
  paymentProvider: z.string().nullable().optional(),
  paymentCustomerId: z.string().nullable().optional(),
  configCreated: z.string(),
  configUpdated: z.string(),
});
export type ClientConfigItem = z.infer<typeof ClientConfigItem>;

/** Defaults for the fields older configuration items were written without. */
const NOT_MANAGED = {
  entity: "clientConfig",
  configurationType: "client",
  mspId: null,
  planPendingTier: null,
  planPendingInvoiceId: null,
  planPendingEffectiveAt: null,
  planExpiresAt: null,
  planRenewedAt: null,
  planBillingAnchor: null,
  planStripeInvoiceId: null,
  planPaymentFailedAt: null,
  planSubscriptionId: null,
  planStateAt: null,
  planPeriodStart: null,
  billingType: "stripe",
  billingStatus: "active",
  billingTo: "client",
  topUpMethod: "manual",
  regionAccess: [],
  sharing: { proxyCredentials: false, targetCredentials: false, targets: false, proxies: false },
  limits: { requestsPerMinute: null, requestsPerDay: null },
  budget: { current: 0, minimumTopUpThreshold: 5, maximumTopUpThreshold: 20 },
  rates: { apiSeconds: 1, storageGB: 1, aiTokens: 1, plan: 1 },
  topUpSequence: 0,
  automaticTopUpFailedAt: null,
  featureOverrides: [],
  promoOverrides: [],
  planTier: "basic",
  planStatus: "active",
};

/** A stored item as a ClientConfigItem; throws naming the fields that fail. */
export const clientConfigItemOf = (item: Record<string, unknown>): ClientConfigItem =>
  parseStored(ClientConfigItem, "client configuration", { ...NOT_MANAGED, ...item });

export const clientConfigKeys = { item: keys.clientConfig } as const;

/** Access pattern "client configuration" (and "MSP of a client", its `mspId`): a consistent GetItem. */
export async function findClientConfig(clientId: string): Promise<ClientConfigItem | undefined> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: clientConfigKeys.item(clientId), ConsistentRead: true }),
  );
  return result.Item ? clientConfigItemOf(result.Item) : undefined;
}

/** Access pattern "client of a payment customer": Query GSI1 `PAYMENTCUSTOMER#<id>`. */
export async function findClientIdByPaymentCustomer(customerId: string): Promise<string | undefined> {
  const items = await queryAll(
    {
      IndexName: "GSI1",
      KeyConditionExpression: "gsi1pk = :pk",
      ExpressionAttributeValues: { ":pk": billingKeys.clientByPaymentCustomerIndex(customerId, "").gsi1pk },
    },
    { max: 1 },
  );
  const clientId = items[0]?.clientId;
  return typeof clientId === "string" ? clientId : undefined;
}
