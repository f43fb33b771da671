/**
 * Store round trips of common Core API calls, warm (authorizer decision cached, as API Gateway
 * caches it), counted by SDK middleware on every region's client: the figures of
 * docs/architecture.md ("Request flow"), held by this test so the doc cannot go stale silently.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamo, kms } from "#lib/aws/clients.ts";
import { getConfig } from "#lib/config.ts";
import { createClientFor, created, startTestStack, type TestStack, type TestUser } from "../support/stack.ts";

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let proxyId: string;

type Stack = { add: (m: unknown, o: { step: string; name: string }) => void; remove: (n: string) => boolean };
const counts = new Map<string, number>();
const name = `round-trips-${randomUUID()}`;

async function countCalls() {
  const middleware =
    (next: (args: unknown) => Promise<unknown>, context: { clientName?: string; commandName?: string }) =>
    async (args: unknown) => {
      const key = `${context.clientName?.replace("Client", "") ?? "?"}:${context.commandName?.replace(/Command$/, "") ?? "?"}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      return next(args);
    };
  for (const region of getConfig().regions) {
    (dynamo(region).middlewareStack as unknown as Stack).add(middleware, { step: "initialize", name });
    ((await kms(region)).middlewareStack as unknown as Stack).add(middleware, { step: "initialize", name });
  }
}

/** The store and KMS calls one request makes, by command. */
async function callsOf(request: () => Promise<{ status: number }>, status = 200) {
  counts.clear();
  const answer = await request();
  expect(answer.status).toBe(status);
  return Object.fromEntries([...counts].sort());
}

beforeAll(async () => {
  stack = await startTestStack({ authorizerCacheTtlSeconds: 300 });
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Round trips");
  const api = `/api/clients/${clientId}`;
  const region = getConfig().homeRegion;
  const credential = (credentialType: "proxy" | "target") =>
    created(
      owner.api.post(`${api}/credentials`, {
        credentialName: credentialType,
        credentialType,
        authType: credentialType === "proxy" ? "apiKey" : "bearer",
        region,
        secret:
          credentialType === "proxy"
            ? { keyName: "x-api-key", keyValue: randomUUID() }
            : { token: randomUUID() },
      }),
      "credentials",
    );
  const [caller, upstream, target] = await Promise.all([
    credential("proxy"),
    credential("target"),
    created(
      owner.api.post(`${api}/targets`, {
        targetName: "t",
        targetRegion: region,
        targetBaseURL: "https://api.example.test",
        targetTestPath: "/health",
      }),
      "targets",
    ),
  ]);
  proxyId = (
    await created(
      owner.api.post(`${api}/proxies`, {
        proxyName: "p",
        proxyRegion: region,
        proxyProxyCredentialId: caller.credentialId,
        proxyTargetId: target.targetId,
        proxyTargetCredentialId: upstream.credentialId,
      }),
      "proxies",
    )
  ).proxyId;
  await countCalls();
});
afterAll(async () => {
  for (const region of getConfig().regions) {
    (dynamo(region).middlewareStack as unknown as Stack).remove(name);
    ((await kms(region)).middlewareStack as unknown as Stack).remove(name);
  }
  await stack?.stop();
});

describe("store round trips per warm Core API call", () => {
  it("GET /api/users: the rate window and the user", async () => {
    const calls = await callsOf(() => owner.api.get("/api/users"));
    process.stdout.write(`round trips GET /api/users: ${JSON.stringify(calls)}\n`);
    expect(calls).toEqual({ "DynamoDB:GetItem": 1, "DynamoDB:UpdateItem": 1 });
  });

  it("GET /api/clients/{clientId}: rate window, membership, then the client and its members", async () => {
    const calls = await callsOf(() => owner.api.get(`/api/clients/${clientId}`));
    process.stdout.write(`round trips GET client: ${JSON.stringify(calls)}\n`);
    expect(calls).toEqual({ "DynamoDB:GetItem": 2, "DynamoDB:Query": 1, "DynamoDB:UpdateItem": 1 });
  });

  it("POST /api/clients: rate window, the user, one transaction, the runtime item in every region", async () => {
    const calls = await callsOf(() => owner.api.post("/api/clients", { clientName: "Another" }), 201);
    process.stdout.write(`round trips POST client: ${JSON.stringify(calls)}\n`);
    // The plan and billing status the data plane reads are copied to each region's runtime item.
    expect(calls).toEqual({
      "DynamoDB:GetItem": 1,
      "DynamoDB:TransactWriteItems": 1,
      "DynamoDB:UpdateItem": 1 + getConfig().regions.length,
    });
  });

  it("GET /api/clients/{clientId}/proxies/{proxyId}: rate window, membership, the proxy in every region", async () => {
    const calls = await callsOf(() => owner.api.get(`/api/clients/${clientId}/proxies/${proxyId}`));
    process.stdout.write(`round trips GET proxy: ${JSON.stringify(calls)}\n`);
    // One GetItem for the membership (checked once, by the dispatcher), one per region for the proxy.
    expect(calls).toEqual({
      "DynamoDB:GetItem": 1 + getConfig().regions.length,
      "DynamoDB:UpdateItem": 1,
    });
  });
});
