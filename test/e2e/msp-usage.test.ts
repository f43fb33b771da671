/**
 * The MSP walkthrough of docs/msp-api.md to its end, over real HTTP against the local stack with
 * streams (the telemetry consumer runs on the regional table's stream) and the payment processor
 * on loopback: an operator creates an MSP and sets its rates, the MSP's team joins by invite, an
 * msp_admin creates a client and sets its rates, budget and automatic top-ups, MSP staff build its
 * proxy through the Core API, traffic goes through the data plane, and the usage report (JSON and
 * CSV) shows the requests, API seconds and both amounts; the budget is drawn down by exactly the
 * amount at the client's rate and topped up by one charge. Then manual top-ups and the role
 * boundaries of both routes.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { listRequestLogsOfProxy } from "#lib/db/entities/request-log.ts";
import { keys } from "#lib/db/keys.ts";
import { apiSecondsAmountNanos, nanosToAmount } from "#lib/domain/msp-pricing.ts";
import { USAGE_CSV_COLUMNS } from "#lib/domain/msp-usage.ts";
import { createMsp, setMspRates } from "#lib/domain/msps.ts";
import {
  type PaymentProcessor,
  type PaymentsEnvironment,
  startPaymentsEnvironment,
} from "../support/payment-processor.ts";
import {
  callDataPlane,
  createProxyParts,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const REGION = "eu-west-1";
const KEY = "msp-usage-caller-key-1234567890";
const VALIDATION = "Input failed data validation";
const REQUESTS = 9;

let stack: TestStack;
let processor: PaymentProcessor;
let payments: PaymentsEnvironment | undefined;
let target: Server;
let owner: TestUser;
let admin: TestUser;
let user: TestUser;
let reader: TestUser;
let outsider: TestUser;
let mspId: string;
let customerId: string;
let clientId: string;
let proxyId: string;
const month = new Date().toISOString().slice(0, 7);

async function joinMsp(member: TestUser, roles: string[]) {
  const invite = await owner.api.post(`/api/msps/${mspId}/invites`, { userEmail: member.email, roles });
  expect(invite.status, JSON.stringify(invite.body)).toBe(201);
  const accepted = await member.api.put(
    `/api/users/${member.userId}/invites/${invite.body.invites[0].inviteId}`,
    {
      acceptInvite: true,
    },
  );
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
}

beforeAll(async () => {
  payments = await startPaymentsEnvironment({ secretKey: "sk_test_msp_usage" });
  processor = payments.processor;
  target = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const delay = Number(new URL(req.url ?? "/", "http://x").searchParams.get("delay") ?? 0);
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"ok":true}');
      }, delay);
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  stack = await startTestStack({ streams: true });
  [owner, admin, user, reader, outsider] = await Promise.all([
    stack.newUser(),
    stack.newUser(),
    stack.newUser(),
    stack.newUser(),
    stack.newUser(),
  ]);

  // An operator creates the MSP and sets its rates (admin CLI: msps create, msps set-rates).
  ({
    msp: { mspId },
  } = await createMsp({ name: "Northwind Managed IT", ownerUserId: owner.userId }));
  await setMspRates(mspId, { apiSeconds: 0.75, storageGB: 0.8, aiTokens: 0.8, plan: 0.8 });
  customerId = (await storedItem(keys.mspConfig(mspId)))?.paymentCustomerId as string;
  // The MSP puts a card on file with the processor (its dashboard).
  processor.setDefaultPaymentMethod(customerId, "pm_card_visa");

  // The msp_owner invites the team; each accepts.
  await joinMsp(admin, ["msp_admin"]);
  await joinMsp(user, ["msp_user"]);
  await joinMsp(reader, ["msp_reader"]);

  // An msp_admin creates a client and sets its rates, budget and automatic top-ups.
  const made = await admin.api.post(`/api/msps/${mspId}/clients`, { clientName: "Contoso" });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  clientId = made.body.client.clientId;
  const configured = await admin.api.put(`/api/msps/${mspId}/clients/${clientId}/configurations`, {
    rates: { apiSeconds: 0.9 },
    budget: { minimumTopUpThreshold: 10, maximumTopUpThreshold: 50 },
    topUpMethod: "automatic",
  });
  expect(configured.status, JSON.stringify(configured.body)).toBe(200);
  expect(configured.body.configuration).toMatchObject({
    billingTo: "msp",
    topUpMethod: "automatic",
    rates: { apiSeconds: 0.9 },
    budget: { current: 0, minimumTopUpThreshold: 10, maximumTopUpThreshold: 50 },
  });

  // MSP staff build the client's proxy through the Core API (acting as devops).
  const parts = await createProxyParts(admin, clientId, {
    region: REGION,
    key: KEY,
    targetBaseURL: `http://127.0.0.1:${(target.address() as AddressInfo).port}`,
  });
  const proxy = await admin.api.post(`/api/clients/${clientId}/proxies`, {
    proxyName: "contoso-api",
    proxyRegion: REGION,
    proxyProxyCredentialId: parts.proxyCredentialId,
    proxyTargetId: parts.targetId,
    proxyTargetCredentialId: parts.targetCredentialId,
  });
  expect(proxy.status, JSON.stringify(proxy.body)).toBe(201);
  proxyId = proxy.body.proxies[0].proxyId;
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await payments?.stop();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
});

const usagePath = (query = `month=${month}`) => `/api/msps/${mspId}/usage?${query}`;

async function csvOf(caller: TestUser, path: string) {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    headers: { Authorization: caller.token, Accept: "text/csv" },
  });
  return {
    status: response.status,
    contentType: response.headers.get("content-type"),
    text: await response.text(),
  };
}

describe("the walkthrough: the client's traffic shows up in the usage report", () => {
  it("reports requests, API seconds and both amounts, draws the budget down and tops it up once", async () => {
    for (let index = 0; index < REQUESTS; index++) {
      const response = await callDataPlane(`${stack.regions[REGION]}/api/${proxyId}/ok?delay=${index * 5}`, {
        headers: { "x-api-key": KEY },
      });
      expect(response.status, response.text).toBe(200);
    }
    // The request log is written after the answer has been handed back: wait for the last one.
    const logs = await vi.waitFor(
      async () => {
        const found = await listRequestLogsOfProxy(REGION, { proxyId, clientId, max: 100 });
        expect(found).toHaveLength(REQUESTS);
        return found;
      },
      { timeout: 10_000, interval: 100 },
    );
    const ms = logs.reduce(
      (sum, log) => sum + ((log.proxyData?.sentAt ?? 0) - (log.proxyData?.receivedAt ?? 0)),
      0,
    );

    // The telemetry consumer aggregates off the hot path: poll the report (bound: 30 s).
    const started = Date.now();
    let report = await user.api.get(usagePath());
    while (report.body.usage?.[0]?.requests !== REQUESTS && Date.now() - started < 30_000) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      report = await user.api.get(usagePath());
    }
    console.info(`usage visible ${Date.now() - started} ms after the last request`);
    expect(report.status, JSON.stringify(report.body)).toBe(200);
    const atClient = nanosToAmount(apiSecondsAmountNanos(ms, 0.9));
    const atMsp = nanosToAmount(apiSecondsAmountNanos(ms, 0.75));
    expect(report.body).toEqual({
      message: "Usage retrieved",
      month,
      currency: "usd",
      usage: [
        {
          clientId,
          clientName: "Contoso",
          billingTo: "msp",
          requests: REQUESTS,
          apiSeconds: ms / 1000,
          clientRate: 0.9,
          amountAtClientRates: atClient,
          mspRate: 0.75,
          amountAtMspRates: atMsp,
        },
      ],
      totals: {
        requests: REQUESTS,
        apiSeconds: ms / 1000,
        amountAtClientRates: atClient,
        amountAtMspRates: atMsp,
      },
      pagination: { page: 1, limit: 100, total: 1, pages: 1 },
    });
    expect(atClient).toBeGreaterThan(atMsp);

    // The same rows as CSV.
    const csv = await csvOf(user, usagePath());
    expect(csv.status).toBe(200);
    expect(csv.contentType).toBe("text/csv; charset=utf-8");
    const lines = csv.text.split("\r\n");
    expect(lines[0]).toBe(USAGE_CSV_COLUMNS.join(","));
    expect(lines[1]).toBe(
      `${month},${clientId},Contoso,msp,${REQUESTS},${(ms / 1000).toFixed(3)},0.9,${atClient.toFixed(9)},0.75,${atMsp.toFixed(9)},usd`,
    );
    expect(lines.slice(2)).toEqual([""]);

    // The budget: 0 was below the minimum (10), so the first draw-down triggered one automatic
    // top-up up to the maximum (50); every draw-down is at 90 nano-USD per ms, exactly.
    let budget = (await admin.api.get(`/api/msps/${mspId}/clients/${clientId}/configurations`)).body
      .configuration.budget;
    const charges = () => processor.paymentIntents.filter((intent) => intent.customer === customerId);
    while (charges().length === 0 && Date.now() - started < 30_000) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(charges()).toHaveLength(1);
    const charged = (charges()[0]?.amount as number) / 100;
    expect(charged).toBeGreaterThanOrEqual(50);
    budget = (await admin.api.get(`/api/msps/${mspId}/clients/${clientId}/configurations`)).body.configuration
      .budget;
    expect(budget.current).toBe(Number((charged - atClient).toFixed(9)));
    expect(charges()[0]).toMatchObject({
      currency: "usd",
      status: "succeeded",
      payment_method: "pm_card_visa",
    });
  }, 90_000);
});

describe("GET /api/msps/{mspId}/usage", () => {
  it("needs msp_user: a reader 403, a non-member 404", async () => {
    expect((await reader.api.get(usagePath())).status).toBe(403);
    expect((await outsider.api.get(usagePath())).status).toBe(404);
    expect((await admin.api.get(usagePath())).status).toBe(200);
  });

  it.each([
    ["", "month"],
    ["month=2026-13", "month"],
    ["month=2026-1", "month"],
    ["month=november", "month"],
    [`month=${month}&limit=1001`, "limit"],
  ])("query %j: 400 naming %s", async (query, field) => {
    const response = await user.api.get(usagePath(query));
    expect(response.status).toBe(400);
    expect(response.body.message).toBe(VALIDATION);
    expect(response.body.fields).toContain(field);
  });

  it("answers a month without traffic with zeros, and CSV with the header only", async () => {
    const report = await user.api.get(usagePath("month=2001-01"));
    expect(report.body.usage[0]).toMatchObject({ requests: 0, apiSeconds: 0, amountAtClientRates: 0 });
    const csv = await csvOf(user, usagePath("month=2001-01&page=2"));
    expect(csv.text).toBe(`${USAGE_CSV_COLUMNS.join(",")}\r\n`);
  });

  it("answers JSON when JSON is preferred", async () => {
    const response = await fetch(`${stack.baseUrl}${usagePath()}`, {
      headers: { Authorization: user.token, Accept: "application/json, text/csv;q=0.5" },
    });
    expect(response.headers.get("content-type")).toContain("application/json");
    expect(response.headers.get("vary")).toBe("Accept");
  });
});

describe("POST /api/msps/{mspId}/clients/{clientId}/top-ups", () => {
  const topUps = () => `/api/msps/${mspId}/clients/${clientId}/top-ups`;
  const current = async () =>
    (await admin.api.get(`/api/msps/${mspId}/clients/${clientId}/configurations`)).body.configuration.budget
      .current as number;

  beforeAll(async () => {
    // The automatic top-up left the balance at the maximum (50): room for manual top-ups.
    const raised = await admin.api.put(`/api/msps/${mspId}/clients/${clientId}/configurations`, {
      budget: { maximumTopUpThreshold: 100 },
    });
    expect(raised.status, JSON.stringify(raised.body)).toBe(200);
  });

  it("402 when the processor declines the card; nothing added", async () => {
    const before = await current();
    processor.setDefaultPaymentMethod(customerId, "pm_card_chargeDeclined");
    try {
      const response = await admin.api.post(topUps(), { amount: 0.5 });
      expect(response.status).toBe(402);
      expect(response.body.message).toBe("Payment failed: Your card was declined.");
      expect(await current()).toBe(before);
    } finally {
      processor.setDefaultPaymentMethod(customerId, "pm_card_visa");
    }
  });

  it("racing top-ups: each answer a 201 or a 409, one charge per 201, each added once", async () => {
    const before = await current();
    const intents = processor.paymentIntents.length;
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => admin.api.post(topUps(), { amount: 1 })),
    );
    const statuses = answers.map((answer) => answer.status);
    const succeeded = statuses.filter((status) => status === 201).length;
    expect(
      statuses.every((status) => status === 201 || status === 409),
      JSON.stringify(statuses),
    ).toBe(true);
    expect(succeeded).toBeGreaterThanOrEqual(1);
    expect(processor.paymentIntents.length - intents).toBe(succeeded);
    expect(await current()).toBe(Number((before + succeeded).toFixed(9)));
  });

  it("charges the MSP and adds the amount, never beyond the maximum", async () => {
    const before = await current();
    const intents = processor.paymentIntents.length;
    // room below the maximum (100), in whole cents
    const room = Math.floor((100 - before) * 100) / 100;
    const tooMuch = await admin.api.post(topUps(), { amount: Math.round((room + 0.01) * 100) / 100 });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body.fields).toEqual(["amount"]);
    const response = await admin.api.post(topUps(), { amount: room });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(response.body.topUp).toMatchObject({
      method: "manual",
      amount: room,
      currency: "usd",
      status: "succeeded",
    });
    expect(response.body.budget.current).toBe(Number((before + room).toFixed(9)));
    expect(processor.paymentIntents.length).toBe(intents + 1);
    expect(processor.paymentIntents.at(-1)).toMatchObject({
      amount: Math.round(room * 100),
      customer: customerId,
    });
  });

  it.each([
    [{}, "amount"],
    [{ amount: "5" }, "amount"],
    [{ amount: -1 }, "amount"],
    [{ amount: 1.005 }, "amount"],
    [{ amount: 0.49 }, "amount"],
    [{ amount: 5, extra: 1 }, ""],
  ])("body %j: 400", async (body, field) => {
    const response = await admin.api.post(topUps(), body);
    expect(response.status).toBe(400);
    if (field) expect(response.body.fields).toContain(field);
  });

  it("409 for a client billed to itself", async () => {
    const other = (await admin.api.post(`/api/msps/${mspId}/clients`, { clientName: "Fabrikam" })).body.client
      .clientId as string;
    const switched = await admin.api.put(`/api/msps/${mspId}/clients/${other}/configurations`, {
      billingTo: "client",
    });
    expect(switched.status).toBe(200);
    const response = await admin.api.post(`/api/msps/${mspId}/clients/${other}/top-ups`, { amount: 5 });
    expect(response.status).toBe(409);
    expect(response.body.message).toBe("Top-ups apply only to clients billed to the MSP by Stripe");
  });

  it("needs msp_admin: an msp_user 403, a non-member 404", async () => {
    expect((await user.api.post(topUps(), { amount: 1 })).status).toBe(403);
    expect((await outsider.api.post(topUps(), { amount: 1 })).status).toBe(404);
  });
});
