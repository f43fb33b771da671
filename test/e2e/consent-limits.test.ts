/**
 * The MCP consent page is no way around the account limits (docs/mcp-oauth.md
 * "Authorization", docs/accounts.md "Limits"): over real HTTP against the local stack, its password
 * attempts count on the same per-IP limit as `/auth/*` (AUTH_REQUESTS_PER_IP_PER_MINUTE, lowered
 * here) and on the same per-address lockout as `/auth/sign-in` (5 failures in 15 minutes), both
 * ways. Before the fix, a burst of consent-page attempts from one address never met a 429.
 */
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH_IP_LIMIT_MESSAGE } from "#lib/api/operations/auth.ts";
import { resetConfig } from "#lib/config.ts";
import { LOCKED_MESSAGE } from "#lib/domain/accounts.ts";
import { newAccountHolder } from "../support/accounts.ts";
import { TestClock } from "../support/clock.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const LIMIT = 12;
const REDIRECT_URI = "http://127.0.0.1:33419/callback";
const clock = new TestClock();
let stack: TestStack;
let previous: Record<string, string | undefined>;

beforeAll(async () => {
  previous = {
    AUTH_REQUESTS_PER_IP_PER_MINUTE: process.env.AUTH_REQUESTS_PER_IP_PER_MINUTE,
    OAUTH_REGISTRATIONS_PER_MINUTE: process.env.OAUTH_REGISTRATIONS_PER_MINUTE,
  };
  process.env.AUTH_REQUESTS_PER_IP_PER_MINUTE = String(LIMIT);
  process.env.OAUTH_REGISTRATIONS_PER_MINUTE = "1000";
  resetConfig();
  stack = await startTestStack({ clock: clock.now });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  for (const [name, value] of Object.entries(previous ?? {})) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  resetConfig();
});

/** The consent form's parameters of a newly registered client. */
async function consentParams(): Promise<Record<string, string>> {
  const registered = await fetch(`${stack.baseUrl}/oauth/register`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "Limits agent" }),
  });
  expect(registered.status).toBe(201);
  const { client_id } = (await registered.json()) as { client_id: string };
  const verifier = randomBytes(32).toString("base64url");
  return {
    response_type: "code",
    client_id,
    redirect_uri: REDIRECT_URI,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    state: "limits",
    resource: stack.mcpUrl,
  };
}

async function consent(params: Record<string, string>, email: string, password: string) {
  const response = await fetch(`${stack.baseUrl}/oauth/authorize`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...params, email, password, consent: "approve" }),
    redirect: "manual",
  });
  return { status: response.status, headers: response.headers, html: await response.text() };
}

async function signIn(email: string, password: string) {
  const response = await fetch(`${stack.baseUrl}/auth/sign-in`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

const stranger = () => `spray-${randomBytes(6).toString("hex")}@limits.example.test`;

describe("the consent page's password attempts", () => {
  it("count on the per-IP /auth limit: a burst reaches a 429 page with Retry-After, and /auth is limited too", async () => {
    const params = await consentParams();
    clock.toNextWindow();
    // A spray: one wrong password for each of many addresses (no address reaches its lockout).
    // In parallel, so that the burst stays well within its minute on a loaded machine.
    const burst = await Promise.all(
      Array.from({ length: LIMIT }, () => consent(params, stranger(), "Winter2024!!")),
    );
    expect(burst.map((answer) => answer.status)).toEqual(Array(LIMIT).fill(401));
    const limited = await consent(params, stranger(), "Winter2024!!");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("content-type")).toMatch(/^text\/html/);
    expect(limited.html).toContain(AUTH_IP_LIMIT_MESSAGE);
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // The same counter: /auth/sign-in from this address is limited as well.
    const signInLimited = await signIn(stranger(), "Winter2024!!");
    expect(signInLimited.status).toBe(429);
    expect(signInLimited.body.message).toBe(AUTH_IP_LIMIT_MESSAGE);
    // The next minute opens again.
    clock.toNextWindow();
    expect((await consent(params, stranger(), "Winter2024!!")).status).toBe(401);
  }, 120_000);

  it("and /auth requests count on the consent page's: a limit spent on /auth refuses the consent page", async () => {
    const params = await consentParams();
    clock.toNextWindow();
    const burst = await Promise.all(Array.from({ length: LIMIT }, () => signIn(stranger(), "Winter2024!!")));
    expect(burst.map((answer) => answer.status)).toEqual(Array(LIMIT).fill(401));
    const limited = await consent(params, stranger(), "Winter2024!!");
    expect(limited.status).toBe(429);
    expect(limited.html).toContain(AUTH_IP_LIMIT_MESSAGE);
  }, 120_000);

  it("share the per-address lockout with /auth/sign-in: 5 failures on the consent page lock sign-in", async () => {
    const holder = await newAccountHolder("consent-lock");
    const params = await consentParams();
    clock.toNextWindow();
    for (let i = 0; i < 5; i++)
      expect((await consent(params, holder.email, "not the password at all")).status).toBe(401);
    const locked = await signIn(holder.email, holder.password);
    expect(locked.status).toBe(429);
    expect(locked.body.message).toBe(LOCKED_MESSAGE);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    // And the consent page itself, with the right password.
    const page = await consent(params, holder.email, holder.password);
    expect(page.status).toBe(429);
    expect(page.html).toContain(LOCKED_MESSAGE);
  }, 120_000);

  it("and 5 failed sign-ins lock the consent page", async () => {
    const holder = await newAccountHolder("signin-lock");
    const params = await consentParams();
    clock.toNextWindow();
    for (let i = 0; i < 5; i++)
      expect((await signIn(holder.email, "not the password at all")).status).toBe(401);
    const page = await consent(params, holder.email, holder.password);
    expect(page.status).toBe(429);
    expect(page.html).toContain(LOCKED_MESSAGE);
    expect(Number(page.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(page.headers.get("location")).toBeNull();
  }, 120_000);
});
