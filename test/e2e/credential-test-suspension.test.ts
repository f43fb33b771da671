/**
 * A suspended organisation calls nothing outside on its behalf
 * (docs/credentials.md "Suspended billing"): the credential test (also the console's target health
 * check, which is a credential test against the target's test path), the token test and the OAuth2
 * code exchange are refused with the data plane's own 402 `billing-suspended`, and the loopback
 * target and token endpoint, which count every request they receive, receive none. Once the
 * billing is active again, the same calls reach them.
 *
 * Suspended by an operator (`clients set-billing`, cli/client-plan.ts), and by dunning: a failed
 * payment past the grace period, by the stack's injected clock.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { syncClientRuntime } from "#lib/db/entities/client-runtime.ts";
import { keys } from "#lib/db/keys.ts";
import { setClientBillingStatus } from "../../cli/client-plan.ts";
import { TestClock } from "../support/clock.ts";
import {
  callDataPlane,
  createClientFor,
  createProxyOf,
  createProxyParts,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const KEY = "suspension-caller-key-123456";
const DAY_MS = 86_400_000;
const SUSPENDED = {
  code: "billing-suspended",
  message: "Payment required: the account's billing is suspended",
};

const clock = new TestClock();
let stack: TestStack;
let server: Server;
let serverBase: string;
/** Every request the loopback target and token endpoint received: `METHOD /path`. */
const hits: string[] = [];

let owner: TestUser;
let clientId: string;
let targetId: string;
let targetCredentialId: string;
let proxyUrl: string;

const base = () => `/api/clients/${clientId}`;

async function credential(authType: string, secret: Record<string, unknown>) {
  const response = await owner.api.post(`${base()}/credentials`, {
    credentialName: `${authType} ${hits.length}`,
    credentialType: "target",
    authType,
    region: US,
    secret,
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.credentials[0] as Record<string, any>;
}

const credentialTest = (credentialId: string, body: Record<string, unknown>) =>
  owner.api.post(`${base()}/credentials/${credentialId}/test`, body);
const tokenTest = (credentialId: string) =>
  owner.api.post(`${base()}/credentials/${credentialId}/token-test`);

/** The provider's redirect back, as a browser follows it. */
async function oauthCallback(authorizationUrl: string) {
  const state = new URL(authorizationUrl).searchParams.get("state");
  const response = await fetch(`${stack.baseUrl}/webhooks/oauth2?code=code-123&state=${state}`, {
    redirect: "manual",
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

/** Every outside call a member can make for the organisation, each expected to answer `status`. */
async function outsideCalls() {
  const custom = await credential("customToken", {
    tokenUrl: `${serverBase}/token`,
    tokenPath: "access_token",
    expiryMethod: "expires_in",
    expiryPath: "expires_in",
  });
  const oauth = await credential("oauth2", {
    flow: "client_credentials",
    tokenUrl: `${serverBase}/token`,
    clientId: "service",
    clientSecret: "service-secret-123",
  });
  const code = await credential("oauth2", {
    flow: "authorization_code",
    tokenUrl: `${serverBase}/token`,
    authorizationUrl: `${serverBase}/authorize`,
    clientId: "web",
    clientSecret: "web-secret-123",
  });
  return {
    // The console's health check of a target: a credential test against its test path.
    healthCheck: () => credentialTest(targetCredentialId, { targetId }),
    otherPath: () =>
      credentialTest(targetCredentialId, { targetId, path: "/other", method: "POST", body: {} }),
    fullUrl: () => credentialTest(targetCredentialId, { url: `${serverBase}/anywhere` }),
    customTokenTest: () => tokenTest(custom.credentialId),
    oauthTokenTest: () => tokenTest(oauth.credentialId),
    codeExchange: () => oauthCallback(code.authorizationUrl),
    codeCredentialId: code.credentialId as string,
  };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        req.url === "/token"
          ? JSON.stringify({ access_token: "tok-suspension-123", token_type: "Bearer", expires_in: 300 })
          : '{"ok":true}',
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  serverBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stack = await startTestStack({ clock: clock.now });
});

// An organisation of its own per test, with a proxy to the counting target.
beforeEach(async () => {
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Suspended Co");
  const parts = await createProxyParts(owner, clientId, { region: US, key: KEY, targetBaseURL: serverBase });
  ({ targetId, targetCredentialId } = parts);
  proxyUrl = `${stack.regions[US]}/api/${await createProxyOf(owner, clientId, US, parts)}`;
  hits.length = 0;
});

afterAll(async () => {
  await stack?.stop();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
});

describe("a suspended organisation's calls to the outside", () => {
  it("suspended by an operator: the data plane's 402 billing-suspended, and the target and token endpoint receive nothing", async () => {
    const calls = await outsideCalls();
    await setClientBillingStatus(clientId, "suspended");
    const dataPlane = await callDataPlane(`${proxyUrl}/x`, { headers: { "x-api-key": KEY } });
    expect(dataPlane.status).toBe(402);
    expect(JSON.parse(dataPlane.text)).toEqual(SUSPENDED);

    for (const [name, call] of Object.entries(calls)) {
      if (typeof call !== "function") continue;
      const answer = await call();
      expect(answer.status, `${name}: ${JSON.stringify(answer.body)}`).toBe(402);
      // The same code and message as the data plane's answer.
      expect(answer.body, name).toMatchObject(SUSPENDED);
    }
    // The checks that come first keep their answers: a token test of a credential that fetches none is a 400.
    const noToken = await tokenTest(targetCredentialId);
    expect(noToken.status, JSON.stringify(noToken.body)).toBe(400);
    expect(hits).toEqual([]);
    // The authorization is used up, its credential still waits: it can be started again later.
    expect(
      (await storedItem(keys.credential(clientId, calls.codeCredentialId), US))?.credentialTemporary,
    ).toBe(true);

    // Active again: the same calls reach the target and the token endpoint.
    await setClientBillingStatus(clientId, "active");
    expect((await calls.healthCheck()).status).toBe(200);
    expect((await calls.fullUrl()).status).toBe(200);
    expect((await calls.customTokenTest()).status).toBe(200);
    expect((await calls.oauthTokenTest()).status).toBe(200);
    expect(hits).toEqual(["GET /", "GET /anywhere", "POST /token", "POST /token"]);
  });

  it("suspended by dunning: refused from the end of the grace period, by the injected clock, like the data plane", async () => {
    const calls = await outsideCalls();
    // A payment failing since now (what the webhook's invoice.payment_failed writes to the runtime items).
    await syncClientRuntime(clientId, { suspendAt: clock.now() + 7 * DAY_MS });
    clock.advance(7 * DAY_MS - 60_000);
    expect((await calls.healthCheck()).status).toBe(200);
    expect(hits).toEqual(["GET /"]);
    clock.advance(60_000);
    const refused = await calls.healthCheck();
    expect(refused.status, JSON.stringify(refused.body)).toBe(402);
    expect(refused.body).toMatchObject(SUSPENDED);
    expect((await calls.customTokenTest()).status).toBe(402);
    expect((await calls.codeExchange()).status).toBe(402);
    const dataPlane = await callDataPlane(`${proxyUrl}/x`, { headers: { "x-api-key": KEY } });
    expect(dataPlane.status).toBe(402);
    expect(hits).toEqual(["GET /"]);
    // Paid: suspendAt cleared, as the webhook's invoice.paid writes it.
    await syncClientRuntime(clientId, { suspendAt: null });
    expect((await calls.healthCheck()).status).toBe(200);
    expect(hits).toEqual(["GET /", "GET /"]);
  });

  it("the OAuth2 code exchange of an active organisation reaches the token endpoint (the control)", async () => {
    const calls = await outsideCalls();
    const done = await calls.codeExchange();
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(hits).toEqual(["POST /token"]);
  });
});
