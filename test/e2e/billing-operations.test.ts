/**
 * An owner's billing operations (issue 24; docs/billing.md "Owner operations") over real HTTP
 * against the local stack, with the payment processor on loopback (the real `stripe` package talks
 * to it): Checkout for an upgrade, the roles that may not, an MSP-billed client, the Billing
 * Portal, invoices, a downgrade and a cancellation at the period's end, and an MSP's setup-mode
 * Checkout. What the processor reports afterwards (webhooks) is tested elsewhere.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { keys } from "#lib/db/keys.ts";
import { MSP_PAYS } from "#lib/domain/billing.ts";
import { createMsp } from "#lib/domain/msps.ts";
import { setSystemAdmin } from "#lib/domain/users.ts";
import { OPERATION_TOOLS } from "#lib/mcp/tools.ts";
import {
  type PaymentProcessor,
  type PaymentsEnvironment,
  startPaymentsEnvironment,
} from "../support/payment-processor.ts";
import {
  createClientFor,
  joinClient,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const PRICES = {
  STRIPE_PRICE_TEAM: "price_team_monthly",
  STRIPE_PRICE_ENTERPRISE_BASIC: "price_enterprise_basic_monthly",
} as const;
const OWNER_ONLY = "Forbidden: requires the owner role";

let stack: TestStack;
let processor: PaymentProcessor;
let payments: PaymentsEnvironment | undefined;
let appUrl: string;

beforeAll(async () => {
  payments = await startPaymentsEnvironment({ secretKey: "sk_test_billing", env: { ...PRICES } });
  processor = payments.processor;
  stack = await startTestStack();
  appUrl = getConfig().appUrl;
});
afterAll(async () => {
  await stack?.stop();
  await payments?.stop();
});

interface Organisation {
  clientId: string;
  owner: TestUser;
  admin: TestUser;
  user: TestUser;
  customerId: string;
}

async function newOrganisation(): Promise<Organisation> {
  const owner = await stack.newUser();
  const clientId = await createClientFor(owner, "Globex");
  const [admin, user] = await Promise.all([stack.newUser(), stack.newUser()]);
  await joinClient(owner, clientId, admin, "admin");
  await joinClient(owner, clientId, user, "user");
  const config = await storedItem(keys.clientConfig(clientId));
  expect(config?.paymentCustomerId).toMatch(/^cus_/);
  return { clientId, owner, admin, user, customerId: String(config?.paymentCustomerId) };
}

const billing = (org: Organisation, rest: string) => `/api/clients/${org.clientId}/billing/${rest}`;
const planOf = async (clientId: string) => {
  const config = await storedItem(keys.clientConfig(clientId));
  return {
    planTier: config?.planTier,
    planStatus: config?.planStatus,
    planPendingTier: config?.planPendingTier,
    planPendingEffectiveAt: config?.planPendingEffectiveAt,
  };
};

/** What the webhook does when a Checkout completes (another part of issue 24): the tier is active. */
async function setPlan(clientId: string, planTier: string, planStatus = "active") {
  await dynamo(getConfig().homeRegion).send(
    new UpdateCommand({
      TableName: getConfig().tableName,
      Key: keys.clientConfig(clientId),
      UpdateExpression: "SET planTier = :tier, planStatus = :status, planPendingTier = :null",
      ExpressionAttributeValues: { ":tier": planTier, ":status": planStatus, ":null": null },
    }),
  );
}

describe("Checkout for an upgrade", () => {
  let org: Organisation;
  beforeAll(async () => {
    org = await newOrganisation();
  });

  it("an owner gets a Checkout URL on the processor, and the client becomes upgrade_requested", async () => {
    const started = await org.owner.api.post(billing(org, "checkout"), { planTier: "team" });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    expect(started.body).toEqual({
      message: "Checkout started",
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/checkout\/pay\/cs_test_/),
      checkoutSessionId: expect.stringMatching(/^cs_test_/),
      expiresAt: expect.any(String),
      planStatus: "upgrade_requested",
      planPendingTier: "team",
    });
    expect(started.body.url.startsWith(processor.url)).toBe(true);
    const session = processor.checkoutSessions.get(started.body.checkoutSessionId);
    expect(session).toMatchObject({
      mode: "subscription",
      customer: org.customerId,
      client_reference_id: org.clientId,
      line_items: [{ price: PRICES.STRIPE_PRICE_TEAM, quantity: 1 }],
      success_url: `${appUrl}/organisations/${org.clientId}/billing?checkout=success`,
      cancel_url: `${appUrl}/organisations/${org.clientId}/billing?checkout=cancelled`,
      metadata: { clientId: org.clientId, planTier: "team", requestedBy: org.owner.userId },
      subscription_data: { metadata: { clientId: org.clientId, planTier: "team" } },
      status: "open",
    });
    expect(started.body.url).toBe(session?.url);
    expect(Date.parse(started.body.expiresAt)).toBe(Number(session?.expires_at) * 1000);
    // Only pending: the tier changes when the processor reports the Checkout complete.
    expect(await planOf(org.clientId)).toEqual({
      planTier: "basic",
      planStatus: "upgrade_requested",
      planPendingTier: "team",
      planPendingEffectiveAt: null,
    });
  });

  it("a second Checkout while one is pending replaces the pending tier", async () => {
    const again = await org.owner.api.post(billing(org, "checkout"), { planTier: "enterprise_basic" });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(processor.checkoutSessions.get(again.body.checkoutSessionId)?.line_items).toEqual([
      { price: PRICES.STRIPE_PRICE_ENTERPRISE_BASIC, quantity: 1 },
    ]);
    expect(await planOf(org.clientId)).toMatchObject({
      planTier: "basic",
      planStatus: "upgrade_requested",
      planPendingTier: "enterprise_basic",
    });
  });

  it("an admin and a user get 403, and nothing is created or changed", async () => {
    const sessions = processor.checkoutSessions.size;
    const before = await planOf(org.clientId);
    for (const caller of [org.admin, org.user]) {
      const refused = await caller.api.post(billing(org, "checkout"), { planTier: "team" });
      expect(refused.status).toBe(403);
      expect(refused.body.message).toBe(OWNER_ONLY);
    }
    expect(processor.checkoutSessions.size).toBe(sessions);
    expect(await planOf(org.clientId)).toEqual(before);
  });

  it("refuses the current or a lower tier (409), a tier not sold online (400) and a bad tier (400)", async () => {
    const fresh = await newOrganisation();
    const same = await fresh.owner.api.post(billing(fresh, "checkout"), { planTier: "basic" });
    expect(same.status).toBe(409);
    expect(same.body.message).toBe("The client is already on the basic plan");
    await setPlan(fresh.clientId, "enterprise_basic");
    const lower = await fresh.owner.api.post(billing(fresh, "checkout"), { planTier: "team" });
    expect(lower.status).toBe(409);
    expect(lower.body.message).toMatch(/^The team plan is below the current enterprise_basic plan/);
    const unsold = await fresh.owner.api.post(billing(fresh, "checkout"), { planTier: "enterprise_custom" });
    expect(unsold.status).toBe(400);
    expect(unsold.body.message).toBe(
      "The enterprise_custom plan cannot be bought online; contact the operator",
    );
    const bad = await fresh.owner.api.post(billing(fresh, "checkout"), { planTier: "platinum" });
    expect(bad.status).toBe(400);
    expect(bad.body.fields).toEqual(["planTier"]);
    // An expired plan is basic: buying its tier again is an upgrade.
    await setPlan(fresh.clientId, "team", "expired");
    const renewed = await fresh.owner.api.post(billing(fresh, "checkout"), { planTier: "team" });
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(201);
    expect(await planOf(fresh.clientId)).toMatchObject({ planTier: "team", planStatus: "upgrade_requested" });
  });

  it("a plan that changes while the Checkout is created is not overwritten: 409, and the session is expired", async () => {
    const fresh = await newOrganisation();
    // The processor reports a payment failure while the session is being created (a race).
    processor.onRequest(async (request) => {
      if (request.method === "POST" && request.path === "/v1/checkout/sessions")
        await setPlan(fresh.clientId, "basic", "payment_failed");
    });
    try {
      const raced = await fresh.owner.api.post(billing(fresh, "checkout"), { planTier: "team" });
      expect(raced.status, JSON.stringify(raced.body)).toBe(409);
      expect(raced.body.message).toBe("The client's plan changed meanwhile; reload it and try again");
    } finally {
      processor.onRequest(undefined);
    }
    expect(await planOf(fresh.clientId)).toMatchObject({
      planStatus: "payment_failed",
      planPendingTier: null,
    });
    const session = [...processor.checkoutSessions.values()].find(
      (candidate) => (candidate.metadata as { clientId?: string }).clientId === fresh.clientId,
    );
    expect(session?.status).toBe("expired");
  });

  it("refuses while a payment has failed; an unreachable processor is 502 and changes nothing", async () => {
    const fresh = await newOrganisation();
    await setPlan(fresh.clientId, "basic", "payment_failed");
    const failed = await fresh.owner.api.post(billing(fresh, "checkout"), { planTier: "team" });
    expect(failed.status).toBe(409);
    expect(failed.body.message).toMatch(/^A payment failed/);
    await setPlan(fresh.clientId, "basic", "active");
    const sessions = processor.checkoutSessions.size;
    // The package retries twice: three failures in a row.
    for (let i = 0; i < 3; i++) processor.failNext(503);
    const down = await fresh.owner.api.post(billing(fresh, "checkout"), { planTier: "team" });
    expect(down.status).toBe(502);
    expect(down.body.message).toBe("The payment processor could not be reached; try again");
    expect(processor.checkoutSessions.size).toBe(sessions);
    expect(await planOf(fresh.clientId)).toMatchObject({ planTier: "basic", planStatus: "active" });
  });
});

describe("the plan and billing as members read them", () => {
  it("every member reads the plan, its limit, what is for sale, and a pending change", async () => {
    const org = await newOrganisation();
    const read = await org.user.api.get(`/api/clients/${org.clientId}/billing`);
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body).toEqual({
      message: "Billing retrieved",
      billing: {
        planTier: "basic",
        planStatus: "active",
        planPendingTier: null,
        planPendingEffectiveAt: null,
        planExpiresAt: null,
        planRenewedAt: null,
        billingTo: "client",
        billingStatus: "active",
        paymentFailedAt: null,
        suspendsAt: null,
        requestsPerMinute: 100,
        tiersForSale: ["team", "enterprise_basic"],
        featureOverrides: [],
        promoOverrides: [],
      },
    });
    expect((await org.owner.api.post(billing(org, "checkout"), { planTier: "team" })).status).toBe(201);
    const pending = await org.admin.api.get(`/api/clients/${org.clientId}/billing`);
    expect(pending.body.billing).toMatchObject({ planStatus: "upgrade_requested", planPendingTier: "team" });
    const outsider = await stack.newUser();
    // Not a member: the organisation is not found for them (as every client route answers).
    expect((await outsider.api.get(`/api/clients/${org.clientId}/billing`)).status).toBe(404);
  });
});

describe("a client billed to its MSP", () => {
  it("has no Checkout or Billing Portal of its own: 409 saying the MSP pays", async () => {
    const sysadmin = await stack.newUser();
    await setSystemAdmin(sysadmin.userId, true);
    const mspOwner = await stack.newUser();
    const { msp } = await createMsp({ name: "Initech Managed", ownerUserId: mspOwner.userId });
    const made = await mspOwner.api.post(`/api/msps/${msp.mspId}/clients`, { clientName: "Contoso" });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const clientId = made.body.client.clientId as string;
    const owner = await stack.newUser();
    const assigned = await sysadmin.api.put(
      `/api/msps/${msp.mspId}/clients/${clientId}/members/${owner.userId}`,
      {
        roles: ["owner"],
      },
    );
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(200);
    expect((await storedItem(keys.clientConfig(clientId)))?.billingTo).toBe("msp");
    const sessions = processor.checkoutSessions.size;
    const portals = processor.portalSessions.size;
    for (const path of ["checkout", "portal"]) {
      const refused = await owner.api.post(`/api/clients/${clientId}/billing/${path}`, { planTier: "team" });
      expect(refused.status, path).toBe(409);
      expect(refused.body.message).toBe(MSP_PAYS);
    }
    const downgrade = await owner.api.post(`/api/clients/${clientId}/billing/downgrade`, {
      planTier: "basic",
    });
    expect(downgrade.status).toBe(409);
    expect(downgrade.body.message).toBe(MSP_PAYS);
    expect(processor.checkoutSessions.size).toBe(sessions);
    expect(processor.portalSessions.size).toBe(portals);
    expect((await storedItem(keys.clientConfig(clientId)))?.planStatus).toBe("active");
  });
});

describe("the Billing Portal and invoices", () => {
  let org: Organisation;
  beforeAll(async () => {
    org = await newOrganisation();
  });

  it("an owner gets a Billing Portal URL that returns to the console's billing page", async () => {
    const opened = await org.owner.api.post(billing(org, "portal"));
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    expect(opened.body).toEqual({ message: "Billing Portal session created", url: expect.any(String) });
    const session = [...processor.portalSessions.values()].find((s) => s.url === opened.body.url);
    expect(session).toMatchObject({
      customer: org.customerId,
      return_url: `${appUrl}/organisations/${org.clientId}/billing`,
    });
    expect((await org.admin.api.post(billing(org, "portal"))).status).toBe(403);
  });

  it("lists the customer's invoices from the processor, newest first, a bounded page at a time", async () => {
    const empty = await org.owner.api.get(billing(org, "invoices"));
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({
      message: "Invoices retrieved",
      invoices: [],
      hasMore: false,
      nextStartingAfter: null,
    });
    const first = processor.addInvoice(org.customerId, { amount_due: 4900, amount_paid: 4900, total: 4900 });
    const second = processor.addInvoice(org.customerId, {
      status: "open",
      amount_due: 1250,
      amount_paid: 0,
      total: 1250,
    });
    const third = processor.addInvoice(org.customerId);
    processor.addInvoice("cus_someone_else");
    const page = await org.owner.api.get(`${billing(org, "invoices")}?limit=2`);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    expect(page.body.invoices.map((invoice: { invoiceId: string }) => invoice.invoiceId)).toEqual([
      third.id,
      second.id,
    ]);
    expect(page.body.invoices[1]).toEqual({
      invoiceId: second.id,
      number: second.number,
      status: "open",
      currency: "usd",
      amountDue: 12.5,
      amountPaid: 0,
      total: 12.5,
      created: new Date(Number(second.created) * 1000).toISOString(),
      periodStart: new Date(Number(second.period_start) * 1000).toISOString(),
      periodEnd: new Date(Number(second.period_end) * 1000).toISOString(),
      hostedInvoiceUrl: second.hosted_invoice_url,
      invoicePdf: second.invoice_pdf,
    });
    expect(page.body).toMatchObject({ hasMore: true, nextStartingAfter: second.id });
    const next = await org.owner.api.get(`${billing(org, "invoices")}?limit=2&startingAfter=${second.id}`);
    expect(next.body.invoices.map((invoice: { invoiceId: string }) => invoice.invoiceId)).toEqual([first.id]);
    expect(next.body).toMatchObject({ hasMore: false, nextStartingAfter: null });
    const listed = processor.requests.filter((r) => r.method === "GET" && r.path === "/v1/invoices").at(-1);
    expect(listed?.query.get("customer")).toBe(org.customerId);
    expect((await org.owner.api.get(`${billing(org, "invoices")}?limit=101`)).status).toBe(400);
    const unknown = await org.owner.api.get(`${billing(org, "invoices")}?startingAfter=in_unknown`);
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toEqual(["startingAfter: no such invoice"]);
    const refused = await org.user.api.get(billing(org, "invoices"));
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(OWNER_ONLY);
  });
});

describe("a downgrade or cancellation at the period's end", () => {
  /** An organisation on `tier` through a completed Checkout (the webhook's part done by hand). */
  async function subscribed(tier: "team" | "enterprise_basic") {
    const org = await newOrganisation();
    const started = await org.owner.api.post(billing(org, "checkout"), { planTier: tier });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const { subscription } = processor.completeCheckout(started.body.checkoutSessionId);
    await setPlan(org.clientId, tier);
    if (!subscription) throw new Error("the Checkout made no subscription");
    const item = (subscription.items as { data: { id: string; current_period_end: number }[] }).data[0];
    return {
      org,
      subscriptionId: String(subscription?.id),
      item: item as { id: string; current_period_end: number },
    };
  }

  it("basic cancels the subscription at the period's end: downgrade_scheduled with the date", async () => {
    const { org, subscriptionId, item } = await subscribed("team");
    const refused = await org.admin.api.post(billing(org, "downgrade"), { planTier: "basic" });
    expect(refused.status).toBe(403);
    expect(processor.subscriptions.get(subscriptionId)?.cancel_at_period_end).toBe(false);
    const scheduled = await org.owner.api.post(billing(org, "downgrade"), { planTier: "basic" });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    const periodEnd = new Date(item.current_period_end * 1000).toISOString();
    expect(scheduled.body).toEqual({
      message: "Downgrade scheduled",
      planTier: "team",
      planStatus: "downgrade_scheduled",
      planPendingTier: "basic",
      planPendingEffectiveAt: periodEnd,
    });
    expect(processor.subscriptions.get(subscriptionId)).toMatchObject({
      cancel_at_period_end: true,
      cancel_at: item.current_period_end,
      metadata: { clientId: org.clientId, pendingPlanTier: "basic", pendingEffectiveAt: periodEnd },
    });
    // The tier and its limits stay until the period ends.
    expect(await planOf(org.clientId)).toEqual({
      planTier: "team",
      planStatus: "downgrade_scheduled",
      planPendingTier: "basic",
      planPendingEffectiveAt: periodEnd,
    });
    // Each transition the owner made is in the inbox once: asking again for the same downgrade is
    // no new transition.
    const again = await org.owner.api.post(billing(org, "downgrade"), { planTier: "basic" });
    expect(again.status).toBe(200);
    const list = await org.owner.api.get(`/api/clients/${org.clientId}/notifications`);
    const notices = (list.body.notifications as { type: string; title: string; message: string }[])
      .filter((notification) => notification.type === "billing")
      .map((notification) => notification.title)
      .sort();
    expect(notices).toEqual(["Downgrade to basic scheduled", "Upgrade to team started"]);
  });

  it("a lower paid tier changes the subscription's price from the next invoice, without proration", async () => {
    const { org, subscriptionId, item } = await subscribed("enterprise_basic");
    const scheduled = await org.owner.api.post(billing(org, "downgrade"), { planTier: "team" });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    expect(scheduled.body).toMatchObject({ planTier: "enterprise_basic", planPendingTier: "team" });
    const subscription = processor.subscriptions.get(subscriptionId);
    expect(subscription).toMatchObject({ cancel_at_period_end: false, last_proration_behavior: "none" });
    expect(
      (subscription?.items as { data: { id: string; price: { id: string } }[] } | undefined)?.data,
    ).toEqual([
      expect.objectContaining({
        id: item.id,
        price: expect.objectContaining({ id: PRICES.STRIPE_PRICE_TEAM }),
      }),
    ]);
    expect(await planOf(org.clientId)).toMatchObject({
      planTier: "enterprise_basic",
      planStatus: "downgrade_scheduled",
      planPendingTier: "team",
    });
    // Changing the scheduled downgrade again is allowed: to basic now.
    const cancel = await org.owner.api.post(billing(org, "downgrade"), { planTier: "basic" });
    expect(cancel.status).toBe(200);
    expect(processor.subscriptions.get(subscriptionId)?.cancel_at_period_end).toBe(true);
  });

  it("refuses a higher or the same tier, and a plan without a subscription (409)", async () => {
    const { org } = await subscribed("team");
    const higher = await org.owner.api.post(billing(org, "downgrade"), { planTier: "enterprise_basic" });
    expect(higher.status).toBe(409);
    expect(higher.body.message).toMatch(/^The enterprise_basic plan is above the current team plan/);
    const same = await org.owner.api.post(billing(org, "downgrade"), { planTier: "team" });
    expect(same.status).toBe(409);
    const bare = await newOrganisation();
    await setPlan(bare.clientId, "team");
    const none = await bare.owner.api.post(billing(bare, "downgrade"), { planTier: "basic" });
    expect(none.status).toBe(409);
    expect(none.body.message).toBe(
      "The client has no active subscription with the payment processor; ask an operator",
    );
    expect(await planOf(bare.clientId)).toMatchObject({ planTier: "team", planStatus: "active" });
  });
});

describe("an MSP's payment method", () => {
  it("an msp_owner gets a setup-mode Checkout for the MSP's customer; an msp_admin gets 403", async () => {
    const mspOwner = await stack.newUser();
    const { msp } = await createMsp({ name: "Umbrella Managed", ownerUserId: mspOwner.userId });
    const customerId = String((await storedItem(keys.mspConfig(msp.mspId)))?.paymentCustomerId);
    expect(customerId).toMatch(/^cus_/);
    const admin = await stack.newUser();
    const invite = await mspOwner.api.post(`/api/msps/${msp.mspId}/invites`, {
      userEmail: admin.email,
      roles: ["msp_admin"],
    });
    expect(invite.status).toBe(201);
    const accepted = await admin.api.put(
      `/api/users/${admin.userId}/invites/${invite.body.invites[0].inviteId}`,
      {
        acceptInvite: true,
      },
    );
    expect(accepted.status).toBe(200);
    const path = `/api/msps/${msp.mspId}/billing/payment-method`;
    const sessions = processor.checkoutSessions.size;
    const refused = await admin.api.post(path);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe("Forbidden");
    expect(processor.checkoutSessions.size).toBe(sessions);

    const started = await mspOwner.api.post(path);
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    expect(started.body).toEqual({
      message: "Payment-method setup started",
      url: expect.stringMatching(/\/checkout\/pay\/cs_test_/),
      checkoutSessionId: expect.any(String),
      expiresAt: expect.any(String),
    });
    expect(processor.checkoutSessions.get(started.body.checkoutSessionId)).toMatchObject({
      mode: "setup",
      customer: customerId,
      currency: "usd",
      line_items: [],
      success_url: `${appUrl}/msps/${msp.mspId}/billing?setup=success`,
      cancel_url: `${appUrl}/msps/${msp.mspId}/billing?setup=cancelled`,
      metadata: { mspId: msp.mspId, purpose: "msp_payment_method", requestedBy: mspOwner.userId },
      setup_intent_data: { metadata: { mspId: msp.mspId } },
      url: started.body.url,
    });
    // The hosted page collects a payment method for that customer (the webhook makes it the default).
    const { setupIntent, paymentMethodId } = processor.completeCheckout(started.body.checkoutSessionId);
    expect(setupIntent).toMatchObject({ customer: customerId, payment_method: paymentMethodId });
  });
});

describe("exposure", () => {
  it("the billing operations are in the OpenAPI document but are not MCP tools (spec 4.15)", async () => {
    const ids = [
      "getClientBilling",
      "startClientCheckout",
      "scheduleClientDowngrade",
      "openClientBillingPortal",
      "listClientInvoices",
      "startMspPaymentMethodSetup",
    ];
    const document = await stack.anonymous.get("/openapi.json");
    expect(document.status).toBe(200);
    const documented = Object.values(
      document.body.paths as Record<string, Record<string, { operationId?: string }>>,
    )
      .flatMap((methods) => Object.values(methods))
      .map((op) => op.operationId);
    for (const id of ids) expect(documented).toContain(id);
    const tools = OPERATION_TOOLS.map((tool) => tool.name);
    for (const name of [
      "get_client_billing",
      "start_client_checkout",
      "schedule_client_downgrade",
      "open_client_billing_portal",
      "list_client_invoices",
      "start_msp_payment_method_setup",
    ])
      expect(tools).not.toContain(name);
  });
});
