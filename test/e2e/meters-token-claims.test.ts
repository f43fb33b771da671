/**
 * Meters over the claims of a jwtVerify caller, over real HTTP against the local stack: the caller
 * signs RS256 tokens whose keys the gateway reads from a JWKS served on loopback. A meter with a
 * variable bound to the `sub` claim and `limitBy` that variable gives each subject its own limit;
 * a conditional meter with a `token` predicate counts only the tokens whose claim matches.
 */
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type CryptoKey, exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { closeOutboundAgents } from "#lib/net/outbound.ts";
import { callerHash, windowAt } from "#lib/shared/meter-windows.ts";
import { loggedRecord } from "../support/request-logs.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  createProxyOf,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const REGION = "us-east-1";
const ISSUER = "https://issuer.gateway.test";
const AUDIENCE = "proxy-gateway";
const KID = `rsa-${randomUUID()}`;

let stack: TestStack;
let owner: TestUser;
let clientId: string;
const servers: Server[] = [];
let privateKey: CryptoKey;
let proxyCredentialId: string;
let targetCredentialId: string;
let targetId: string;

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  const pair = await generateKeyPair("RS256", { extractable: true });
  privateKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: KID, alg: "RS256", use: "sig" };
  const jwksBase = await listen(
    createServer((req, res) => {
      if (req.url !== "/.well-known/jwks.json") return void res.writeHead(404).end();
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] }));
    }),
  );
  const targetBase = await listen(
    createServer((req, res) => {
      req.resume();
      req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
    }),
  );
  stack = await startTestStack();
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Claims Co");
  const api = `/api/clients/${clientId}`;
  const [caller, upstream, target] = await Promise.all([
    created(
      owner.api.post(`${api}/credentials`, {
        credentialName: "caller",
        credentialType: "proxy",
        authType: "jwtVerify",
        region: REGION,
        secret: {
          algorithms: ["RS256"],
          issuer: ISSUER,
          audience: AUDIENCE,
          subject: "user-*",
          jwksUri: `${jwksBase}/.well-known/jwks.json`,
        },
      }),
      "credentials",
    ),
    created(
      owner.api.post(`${api}/credentials`, {
        credentialName: "upstream",
        credentialType: "target",
        authType: "none",
        region: REGION,
        secret: {},
      }),
      "credentials",
    ),
    created(
      owner.api.post(`${api}/targets`, {
        targetName: "t",
        targetRegion: REGION,
        targetBaseURL: targetBase,
        targetTestPath: "/",
      }),
      "targets",
    ),
  ]);
  proxyCredentialId = caller.credentialId;
  targetCredentialId = upstream.credentialId;
  targetId = target.targetId;
});
afterAll(async () => {
  await closeOutboundAgents();
  await stack?.stop();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function proxyWithMeter(body: Record<string, unknown>): Promise<{ proxyId: string; meterId: string }> {
  const proxyId = await createProxyOf(owner, clientId, REGION, {
    proxyCredentialId,
    targetId,
    targetCredentialId,
  });
  const meter = await created(
    owner.api.post(`/api/clients/${clientId}/proxies/${proxyId}/meters`, body),
    "meters",
  );
  return { proxyId, meterId: meter.meterId };
}

/** A fresh token (its own jti) for `sub`, with `claims` beside the registered ones. */
const tokenFor = (sub: string, claims: Record<string, unknown> = {}) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: "RS256", kid: KID })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(sub)
    .setIssuedAt()
    .setJti(randomUUID())
    .setExpirationTime(Math.floor(Date.now() / 1000) + 600)
    .sign(privateKey);

const call = async (proxyId: string, token: string) =>
  callDataPlane(`${stack.regions[REGION]}/api/${proxyId}/x`, {
    headers: { authorization: `Bearer ${token}` },
  });

/** The statuses of `n` requests in turn, each with a fresh token from `mint`. */
async function statuses(proxyId: string, n: number, mint: () => Promise<string>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await call(proxyId, await mint())).status);
  return out;
}

const hourValue = async (meterId: string, caller?: string) =>
  (await storedItem(keys.meterWindow(meterId, "hour", windowAt("hour", Date.now()).start, caller), REGION))
    ?.value;

/** The listed request log record of a request, once written (it is written after the answer). */
const logged = (proxyId: string, requestId: string) => loggedRecord(owner.api, clientId, proxyId, requestId);

describe("a per-caller limit by the token's sub claim", () => {
  it("gives each subject its own limit of 2: two passes each, then 429", async () => {
    const { proxyId, meterId } = await proxyWithMeter({
      meterType: "request_count",
      meterActive: true,
      variables: [{ name: "user", source: "token", key: "sub" }],
      limitBy: "user",
      limits: { hour: 2 },
    });
    expect(await statuses(proxyId, 3, () => tokenFor("user-alice"))).toEqual([200, 200, 429]);
    // Another subject has its own bucket, untouched by alice's.
    expect(await statuses(proxyId, 3, () => tokenFor("user-bob"))).toEqual([200, 200, 429]);
    // A new token does not give a subject a new bucket: the claim is the key, not the token.
    const refused = await call(proxyId, await tokenFor("user-alice"));
    expect(refused.status).toBe(429);
    expect(refused.headers.get("service-proxy-code")).toBe("meter-limit-exceeded");
    expect(refused.headers.get("ratelimit")).toMatch(/;pk=:[A-Za-z0-9+/=]+:$/);
    expect(await hourValue(meterId, callerHash("user-alice"))).toBe(2);
    expect(await hourValue(meterId, callerHash("user-bob"))).toBe(2);
    // Neither the meter-wide counter nor the shared bucket of callers without a sub was used.
    expect(await hourValue(meterId)).toBeUndefined();
    expect(await hourValue(meterId, callerHash(""))).toBeUndefined();
  });
});

describe("a conditional meter with a token predicate", () => {
  it("include: counts, and limits, only the tokens whose claim matches", async () => {
    const { proxyId, meterId } = await proxyWithMeter({
      meterType: "request_count",
      meterActive: true,
      meterMode: "conditional",
      effect: "include",
      token: [{ claim: "tier", pattern: "^free$", presence: "present" }],
      limits: { hour: 2 },
    });
    expect(await statuses(proxyId, 3, () => tokenFor("user-carol", { tier: "free" }))).toEqual([
      200, 200, 429,
    ]);
    // Tokens whose claim does not match, or that have none, are not counted, so never refused.
    expect(await statuses(proxyId, 3, () => tokenFor("user-carol", { tier: "paid" }))).toEqual([
      200, 200, 200,
    ]);
    expect(await statuses(proxyId, 2, () => tokenFor("user-dave", { tier: "free-trial" }))).toEqual([
      200, 200,
    ]);
    expect(await statuses(proxyId, 2, () => tokenFor("user-dave"))).toEqual([200, 200]);
    expect(await hourValue(meterId)).toBe(2);
    // The request log says which requests the meter applied to.
    const paid = await call(proxyId, await tokenFor("user-carol", { tier: "paid" }));
    expect((await logged(proxyId, paid.headers.get("x-request-id")!)).metering).toEqual({
      applied: [],
      refused: [],
    });
    const free = await call(proxyId, await tokenFor("user-erin", { tier: "free" }));
    expect(free.status).toBe(429);
    expect((await logged(proxyId, free.headers.get("x-request-id")!)).metering).toEqual({
      applied: [meterId],
      refused: [{ meterId, window: "hour" }],
    });
  });
});
