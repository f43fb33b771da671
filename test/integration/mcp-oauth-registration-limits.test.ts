/**
 * The registration limits of the MCP endpoint's OAuth server (docs/mcp-oauth.md, "Registration
 * limits") over real HTTP against the emulator: handleOAuthRequest on a loopback server that gives
 * it the connection's address as the function URL gives `sourceIp`; the callers connect from
 * different loopback addresses (127.0.0.x: real source addresses, no header). Parallel
 * registrations: exactly `perMinute` per address succeed, the rest get 429 with Retry-After; at
 * most `pendingMax` clients wait for a first approval (503 with Retry-After); an approval frees a
 * place; an expired registration or counter is ignored on read.
 */
import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { countPendingClients } from "#lib/db/entities/oauth-client.ts";
import { keys } from "#lib/db/keys.ts";
import { homeDb, nowSeconds, tableName } from "#lib/db/store.ts";
import { handleOAuthRequest } from "#lib/oauth/http.ts";
import { s256Challenge } from "#lib/oauth/pkce.ts";
import {
  DEFAULT_REGISTRATIONS_PER_MINUTE,
  PENDING_BUCKET_MS,
  PENDING_CLIENT_TTL_SECONDS,
  pendingBucketsAt,
} from "#lib/oauth/registration-limits.ts";
import { provisionSigningKey, provisionTable } from "#local/provision.ts";
import { newAccountHolder } from "../support/accounts.ts";
import { storedItem } from "../support/stack.ts";
import { serveWebHandler, type WebHandlerServer } from "../support/web-handler-server.ts";

let server: WebHandlerServer;
let port: number;
const REDIRECT_URI = "http://127.0.0.1:33420/callback";

beforeAll(async () => {
  const config = getConfig();
  await Promise.all([
    provisionTable(config.homeRegion, config.tableName),
    provisionSigningKey(config.homeRegion, config.oauthSigningKeyId),
  ]);
  delete process.env.OAUTH_REGISTRATIONS_PER_MINUTE;
  delete process.env.OAUTH_PENDING_CLIENTS_MAX;
  server = await serveWebHandler((request, { remoteAddress }) =>
    handleOAuthRequest(request, { sourceIp: remoteAddress }),
  );
  port = Number(new URL(server.baseUrl).port);
});

afterAll(async () => {
  await server?.close();
  delete process.env.OAUTH_PENDING_CLIENTS_MAX;
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, any>;
}

/** POST /oauth/register from the loopback address `from` (the server sees it as the source). */
function registerFrom(from: string, body: Record<string, unknown> = {}): Promise<Answer> {
  const payload = JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "Limits agent", ...body });
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        localAddress: from,
        method: "POST",
        path: "/oauth/register",
        headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(payload) },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, any>,
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/** Not within the last seconds of a minute (or an hour): a burst stays in one fixed window. */
async function awayFromWindowEnd(windowMs: number, marginMs = 4000) {
  const left = windowMs - (Date.now() % windowMs);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

let addressCounter = 10;
/** A loopback address no other test used. */
const freshAddress = () => {
  addressCounter += 1;
  return `127.0.${Math.floor(addressCounter / 250)}.${(addressCounter % 250) + 2}`;
};

const statusesOf = (answers: Answer[]) => answers.map((answer) => answer.status).sort();

async function pendingTotal(): Promise<number> {
  const { current, earlier } = pendingBucketsAt(Date.now());
  const counts = await countPendingClients([current, ...earlier]);
  return [...counts.values()].reduce((sum, count) => sum + count, 0);
}

describe("registrations per source address", () => {
  it("lets exactly 10 of 20 parallel registrations from one address through; the rest get 429 with Retry-After", async () => {
    await awayFromWindowEnd(60_000);
    const address = freshAddress();
    const answers = await Promise.all(Array.from({ length: 20 }, () => registerFrom(address)));
    expect(statusesOf(answers)).toEqual([
      ...Array(DEFAULT_REGISTRATIONS_PER_MINUTE).fill(201),
      ...Array(20 - DEFAULT_REGISTRATIONS_PER_MINUTE).fill(429),
    ]);
    for (const refused of answers.filter((answer) => answer.status === 429)) {
      expect(refused.body).toEqual({
        error: "temporarily_unavailable",
        error_description: expect.stringMatching(
          /^registration: at most 10 registrations a minute from one address/,
        ),
      });
      const retryAfter = Number(refused.headers["retry-after"]);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(refused.headers["cache-control"]).toBe("no-store");
      expect(refused.headers["access-control-expose-headers"]).toBe("Retry-After");
    }
    // Another address has its own count.
    expect((await registerFrom(freshAddress())).status).toBe(201);
  });

  it("checks the metadata before counting: a refused registration is a 400 naming the field and costs nothing", async () => {
    const address = freshAddress();
    for (let i = 0; i < 12; i += 1) {
      const answer = await registerFrom(address, { redirect_uris: ["http://agent.example/cb"] });
      expect(answer.status).toBe(400);
      expect(answer.body.error_description).toMatch(/^redirect_uris\[0\]/);
    }
    expect((await registerFrom(address)).status).toBe(201);
  });
});

describe("clients waiting for a first approval", () => {
  it("admits exactly up to OAUTH_PENDING_CLIENTS_MAX of parallel registrations (503 with Retry-After beyond); an approval frees a place", async () => {
    await awayFromWindowEnd(PENDING_BUCKET_MS);
    const before = await pendingTotal();
    process.env.OAUTH_PENDING_CLIENTS_MAX = String(before + 4);
    try {
      const answers = await Promise.all(Array.from({ length: 10 }, () => registerFrom(freshAddress())));
      expect(statusesOf(answers)).toEqual([201, 201, 201, 201, 503, 503, 503, 503, 503, 503]);
      for (const refused of answers.filter((answer) => answer.status === 503)) {
        expect(refused.body).toEqual({
          error: "temporarily_unavailable",
          error_description: `registration: ${before + 4} registered clients are waiting for a user's first approval, the most there may be; try again later`,
        });
        const retryAfter = Number(refused.headers["retry-after"]);
        expect(retryAfter).toBeGreaterThan(0);
        expect(retryAfter).toBeLessThanOrEqual(PENDING_CLIENT_TTL_SECONDS + 3600);
      }
      expect(await pendingTotal()).toBe(before + 4);

      // A user approves one of them: it leaves the pending count, and one more may register.
      const admitted = answers.find((answer) => answer.status === 201)?.body.client_id as string;
      const stored = await storedItem(keys.oauthClient(admitted));
      expect(stored).toMatchObject({ pendingBucket: expect.any(Number) });
      expect(stored?.TTL).toBeGreaterThan(nowSeconds() + PENDING_CLIENT_TTL_SECONDS - 60);
      expect(stored?.TTL).toBeLessThanOrEqual(nowSeconds() + PENDING_CLIENT_TTL_SECONDS);
      const user = await newAccountHolder("limits");
      const approval = await fetch(`${server.baseUrl}/oauth/authorize`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          response_type: "code",
          client_id: admitted,
          redirect_uri: REDIRECT_URI,
          code_challenge: s256Challenge(randomBytes(32).toString("base64url")),
          code_challenge_method: "S256",
          email: user.email,
          password: user.password,
          consent: "approve",
        }),
        redirect: "manual",
      });
      expect(approval.status, await approval.clone().text()).toBe(303);
      const approved = await storedItem(keys.oauthClient(admitted));
      expect(approved?.pendingBucket).toBeUndefined();
      expect(approved?.approvedAt).toEqual(expect.any(String));
      expect(approved?.TTL).toBeGreaterThan(nowSeconds() + 170 * 24 * 3600);
      expect(await pendingTotal()).toBe(before + 3);

      expect((await registerFrom(freshAddress())).status).toBe(201);
      expect((await registerFrom(freshAddress())).status).toBe(503);
    } finally {
      delete process.env.OAUTH_PENDING_CLIENTS_MAX;
    }
  });

  it("ignores an expired registration and an expired counter on read, and counts the earlier hours' live ones", async () => {
    // A registration whose day has passed (TTL due, not yet deleted by DynamoDB) is unknown.
    const registered = await registerFrom(freshAddress());
    expect(registered.status).toBe(201);
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.oauthClient(registered.body.client_id),
        UpdateExpression: "SET #ttl = :past",
        ExpressionAttributeNames: { "#ttl": "TTL" },
        ExpressionAttributeValues: { ":past": nowSeconds() - 1 },
      }),
    );
    const query = new URLSearchParams({
      response_type: "code",
      client_id: registered.body.client_id,
      redirect_uri: REDIRECT_URI,
      code_challenge: s256Challenge(randomBytes(32).toString("base64url")),
      code_challenge_method: "S256",
    });
    const page = await fetch(`${server.baseUrl}/oauth/authorize?${query}`, { redirect: "manual" });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain("client_id: unknown client");

    // The counter of 24 hours ago: full, but expired -> not counted; live again -> counted.
    await awayFromWindowEnd(PENDING_BUCKET_MS);
    const oldest = pendingBucketsAt(Date.now()).earlier.at(-1) as number;
    const setOldest = (ttl: number) =>
      homeDb().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.rateWindow("OAUTHPENDING", oldest),
          UpdateExpression: "SET pending = :n, #ttl = :ttl, entity = :entity",
          ExpressionAttributeNames: { "#ttl": "TTL" },
          ExpressionAttributeValues: { ":n": 50, ":ttl": ttl, ":entity": "oauthPendingClients" },
        }),
      );
    await setOldest(nowSeconds() - 1);
    process.env.OAUTH_PENDING_CLIENTS_MAX = String((await pendingTotal()) + 10);
    try {
      expect((await registerFrom(freshAddress())).status).toBe(201);
      await setOldest(nowSeconds() + 600);
      expect((await registerFrom(freshAddress())).status).toBe(503);
    } finally {
      delete process.env.OAUTH_PENDING_CLIENTS_MAX;
    }
  });
});
