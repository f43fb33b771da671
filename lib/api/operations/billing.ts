/**
 * An owner's billing operations (issue 24; docs/billing.md "Owner operations"): Checkout for an
 * upgrade, a downgrade or cancellation at the period's end, the Billing Portal and the invoice
 * list of a client, and Checkout in setup mode for an MSP's payment method. Only `owner` (and for
 * the MSP, `msp_owner`) may call them. They are web UI operations (spec 4.15): in the registry and
 * the OpenAPI, never MCP tools (lib/mcp/tools.ts MCP_EXCLUDED_OPERATIONS).
 */
import { z } from "zod";
import { access, operation, pathParams } from "#lib/api/operation.ts";
import {
  getClientBilling,
  listInvoices,
  openBillingPortal,
  scheduleDowngrade,
  startCheckout,
  startMspPaymentMethodSetup,
} from "#lib/domain/billing.ts";
import { PLAN_STATUSES, PLAN_TIERS } from "#lib/domain/plans.ts";

const ClientParams = pathParams("clientId");
const MspParams = pathParams("mspId");
const BILLING = "/api/clients/{clientId}/billing";

const PlanTierBody = z
  .object({ planTier: z.enum(PLAN_TIERS, { error: "required, one of the plan tiers" }) })
  .strict();

const CheckoutSchema = z.object({
  url: z.string().describe("The processor's hosted Checkout page: send the browser there"),
  checkoutSessionId: z.string(),
  expiresAt: z.string().describe("When the Checkout Session stops accepting payment"),
});

const InvoicesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  startingAfter: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .describe("The last invoiceId of the previous page (its `nextStartingAfter`)"),
});

const InvoiceSchema = z.object({
  invoiceId: z.string(),
  number: z.string().nullable(),
  status: z.string().nullable().describe("draft, open, paid, uncollectible or void"),
  currency: z.string(),
  amountDue: z.number().describe("In the currency's units (dollars), as every amount of the API"),
  amountPaid: z.number(),
  total: z.number(),
  created: z.string(),
  periodStart: z.string(),
  periodEnd: z.string(),
  hostedInvoiceUrl: z.string().nullable(),
  invoicePdf: z.string().nullable(),
});

const OWNER_ONLY = "Only an `owner` of the client may call it (403 `Forbidden: requires the owner role`).";
const MSP_BILLED =
  "A client billed to its MSP (`billingTo` `msp`) has no billing of its own: 409 `Billing is handled by the client's MSP: the MSP pays for this client's plan`.";
const PROCESSOR = "An unreachable payment processor (or none configured) is a 502.";

const CHECKOUT_EXAMPLE = {
  message: "Checkout started",
  url: "https://checkout.stripe.com/c/pay/cs_test_a1b2c3",
  checkoutSessionId: "cs_test_a1b2c3",
  expiresAt: "2026-11-28T03:00:00.000Z",
};

const ClientBillingSchema = z.object({
  planTier: z.enum(PLAN_TIERS),
  planStatus: z.enum(PLAN_STATUSES),
  planPendingTier: z.enum(PLAN_TIERS).nullable(),
  planPendingEffectiveAt: z.string().nullable(),
  planExpiresAt: z.string().nullable().describe("The end of the paid period: the renewal date"),
  planRenewedAt: z.string().nullable(),
  billingTo: z
    .enum(["client", "msp"])
    .describe("msp: the client's MSP pays; the client has no billing of its own"),
  billingStatus: z
    .enum(["active", "suspended"])
    .describe("suspended: the data plane answers 402 billing-suspended"),
  paymentFailedAt: z.string().nullable().describe("When the failing payment started (payment_failed)"),
  suspendsAt: z
    .string()
    .nullable()
    .describe("When a failing payment suspends the billing (the grace period's end)"),
  requestsPerMinute: z.number().int().describe("What the plan grants per API token and per proxy credential"),
  tiersForSale: z.array(z.enum(PLAN_TIERS)).describe("The paid tiers sold online, in ascending order"),
  featureOverrides: z
    .array(z.string())
    .describe(
      'Set by a system administrator: features granted beyond the plan (docs/billing.md "Overrides")',
    ),
  promoOverrides: z
    .array(z.string())
    .describe(
      'Set by a system administrator: promotions agreed with the client (docs/billing.md "Overrides")',
    ),
});

/** The client's own billing (the `clients` function group). */
export const clientBillingOperations = [
  operation({
    id: "getClientBilling",
    method: "GET",
    path: BILLING,
    group: "clients",
    summary: "Get the client's plan and billing",
    description:
      "The client's plan (tier, status, any pending change and its date, the renewal date), who pays (`billingTo`), the billing status in force (suspended once a failed payment outlasts the grace period, docs/billing.md) and its date, the requests per minute the plan grants, the tiers sold online, and the feature and promo overrides a system administrator set. Every member may read it; changing it is the owner's (the operations below). Web UI only: not an MCP tool.",
    access: access.client("reader"),
    effect: "read",
    params: ClientParams,
    response: { status: 200, schema: z.object({ message: z.string(), billing: ClientBillingSchema }) },
    errors: [403, 404],
    handler: async ({ member }) => ({
      body: { message: "Billing retrieved", billing: await getClientBilling(member) },
    }),
  }),
  operation({
    id: "startClientCheckout",
    method: "POST",
    path: `${BILLING}/checkout`,
    group: "clients",
    summary: "Start Checkout for a plan upgrade",
    description: `Creates a Checkout Session in subscription mode for \`planTier\`, a tier above the current one (an expired plan counts as basic), at its configured price, and answers its \`url\`: the browser completes the payment on the processor's page and returns to the console's billing page (\`?checkout=success\` or \`cancelled\`). The client's \`planStatus\` becomes \`upgrade_requested\` with \`planPendingTier\`; the tier changes when the processor reports the Checkout complete. ${OWNER_ONLY} ${MSP_BILLED} 409 for the current or a lower tier, while a payment has failed or a downgrade is scheduled, or when the plan changed meanwhile; 400 for a tier not sold online. ${PROCESSOR}`,
    access: access.client("owner"),
    effect: "write",
    params: ClientParams,
    body: PlanTierBody,
    response: {
      status: 201,
      schema: CheckoutSchema.extend({
        message: z.string(),
        planStatus: z.enum(PLAN_STATUSES),
        planPendingTier: z.enum(PLAN_TIERS),
      }),
    },
    errors: [403, 404, 409, 502],
    documentation: {
      examples: {
        body: { planTier: "team" },
        response: { ...CHECKOUT_EXAMPLE, planStatus: "upgrade_requested", planPendingTier: "team" },
      },
    },
    handler: async ({ member, body }) => ({
      status: 201,
      body: { message: "Checkout started", ...(await startCheckout(member, body.planTier)) },
    }),
  }),
  operation({
    id: "scheduleClientDowngrade",
    method: "POST",
    path: `${BILLING}/downgrade`,
    group: "clients",
    summary: "Schedule a downgrade or cancellation",
    description: `Moves the client to \`planTier\`, a tier below the current one, at the end of the current billing period: \`basic\` cancels the subscription then, a lower paid tier changes its price from the next invoice (no proration). The client's \`planStatus\` becomes \`downgrade_scheduled\` with \`planPendingTier\` and \`planPendingEffectiveAt\` (the period's end); until then the current tier and its limits stay. ${OWNER_ONLY} ${MSP_BILLED} 409 for the current or a higher tier, an expired plan, a failed payment, no active subscription, or a plan that changed meanwhile; 400 for a paid tier not sold online. ${PROCESSOR}`,
    access: access.client("owner"),
    effect: "write",
    params: ClientParams,
    body: PlanTierBody,
    response: {
      status: 200,
      schema: z.object({
        message: z.string(),
        planTier: z.enum(PLAN_TIERS),
        planStatus: z.enum(PLAN_STATUSES),
        planPendingTier: z.enum(PLAN_TIERS),
        planPendingEffectiveAt: z.string(),
      }),
    },
    errors: [403, 404, 409, 502],
    documentation: {
      examples: {
        body: { planTier: "basic" },
        response: {
          message: "Downgrade scheduled",
          planTier: "team",
          planStatus: "downgrade_scheduled",
          planPendingTier: "basic",
          planPendingEffectiveAt: "2026-12-27T00:00:00.000Z",
        },
      },
    },
    handler: async ({ member, body }) => ({
      body: { message: "Downgrade scheduled", ...(await scheduleDowngrade(member, body.planTier)) },
    }),
  }),
  operation({
    id: "openClientBillingPortal",
    method: "POST",
    path: `${BILLING}/portal`,
    group: "clients",
    summary: "Open the Billing Portal",
    description: `Creates a Billing Portal session for the client's customer record and answers its \`url\`: payment methods, invoices and cancellation on the processor's page, returning to the console's billing page. ${OWNER_ONLY} ${MSP_BILLED} ${PROCESSOR}`,
    access: access.client("owner"),
    effect: "write",
    params: ClientParams,
    response: { status: 201, schema: z.object({ message: z.string(), url: z.string() }) },
    errors: [403, 404, 409, 502],
    documentation: {
      examples: {
        response: {
          message: "Billing Portal session created",
          url: "https://billing.stripe.com/p/session/test_a1b2",
        },
      },
    },
    handler: async ({ member }) => ({
      status: 201,
      body: { message: "Billing Portal session created", ...(await openBillingPortal(member)) },
    }),
  }),
  operation({
    id: "listClientInvoices",
    method: "GET",
    path: `${BILLING}/invoices`,
    group: "clients",
    summary: "List the client's invoices",
    description: `The client's invoices from the payment processor, newest first, \`limit\` at a time (default 20, at most 100); the next page starts after \`nextStartingAfter\` (query \`startingAfter\`; one that names no invoice of the client is a 400). Amounts are in the currency's units. A client without a customer record has none. ${OWNER_ONLY} ${PROCESSOR}`,
    access: access.client("owner"),
    effect: "read",
    params: ClientParams,
    query: InvoicesQuery,
    response: {
      status: 200,
      schema: z.object({
        message: z.string(),
        invoices: z.array(InvoiceSchema),
        hasMore: z.boolean(),
        nextStartingAfter: z.string().nullable(),
      }),
    },
    errors: [403, 404, 502],
    documentation: {
      examples: {
        response: {
          message: "Invoices retrieved",
          invoices: [
            {
              invoiceId: "in_1a2b3c",
              number: "A1B2C3-0001",
              status: "paid",
              currency: "usd",
              amountDue: 49,
              amountPaid: 49,
              total: 49,
              created: "2026-11-27T03:00:00.000Z",
              periodStart: "2026-11-27T03:00:00.000Z",
              periodEnd: "2026-12-27T03:00:00.000Z",
              hostedInvoiceUrl: "https://invoice.stripe.com/i/acct_1/test_a1b2",
              invoicePdf: "https://pay.stripe.com/invoice/acct_1/test_a1b2/pdf",
            },
          ],
          hasMore: false,
          nextStartingAfter: null,
        },
      },
    },
    handler: async ({ member, query }) => ({
      body: { message: "Invoices retrieved", ...(await listInvoices(member, query)) },
    }),
  }),
];

/** The MSP's payment method (the `msps` function group). */
export const mspBillingOperations = [
  operation({
    id: "startMspPaymentMethodSetup",
    method: "POST",
    path: "/api/msps/{mspId}/billing/payment-method",
    group: "msps",
    summary: "Add the MSP's payment method",
    description: `Creates a Checkout Session in setup mode for the MSP's customer record and answers its \`url\`: the processor collects the payment method (no card data reaches the service) and the browser returns to the console's MSP billing page (\`?setup=success\` or \`cancelled\`). Once the processor reports it, the method is the MSP's default, which billing managed clients to the MSP needs (spec 4.14 rule 4). Only an \`msp_owner\` may call it (403 \`Forbidden\`); 409 when the MSP has no customer record. ${PROCESSOR}`,
    access: access.msp("msp_owner"),
    effect: "write",
    params: MspParams,
    response: { status: 201, schema: CheckoutSchema.extend({ message: z.string() }) },
    errors: [403, 404, 409, 502],
    documentation: {
      examples: {
        response: { ...CHECKOUT_EXAMPLE, message: "Payment-method setup started" },
      },
    },
    handler: async ({ msp }) => ({
      status: 201,
      body: { message: "Payment-method setup started", ...(await startMspPaymentMethodSetup(msp)) },
    }),
  }),
];

export const billingOperations = [...clientBillingOperations, ...mspBillingOperations];
