/**
 * Recovery ends every way in (issue 33, M1 and the deletion leftover; docs/accounts.md "Recovery"),
 * over real HTTP against the local stack: a password reset revokes every session, API token and
 * MCP OAuth grant and lists the passkeys with a removal token; a signed-in password change does the
 * same on request; a scheduled deletion revokes at once and a sign-in during its grace period may
 * cancel it.
 */
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueToken } from "#lib/domain/tokens.ts";
import { type AccountHolder, newAccountHolder } from "../support/accounts.ts";
import { TestClock } from "../support/clock.ts";
import { sentEmails } from "../support/emulator.ts";
import { type ApiClient, apiClient, startTestStack, type TestStack } from "../support/stack.ts";

const REDIRECT_URI = "http://127.0.0.1:33419/callback";
let stack: TestStack;
let mcpOrigin: string;
const clock = new TestClock();

beforeAll(async () => {
  stack = await startTestStack({ clock: clock.now });
  mcpOrigin = new URL(stack.mcpUrl).origin;
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

/** A strong password nobody guesses (the common-password check accepts it). */
const strongPassword = () => `recovery ${randomBytes(12).toString("base64url")} lantern`;

interface Answer {
  status: number;
  body: Record<string, any>;
  headers: Headers;
}

async function call(method: string, path: string, body?: unknown, cookie?: string): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (cookie) headers.Cookie = cookie;
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {}, headers: response.headers };
}
const post = (path: string, body?: unknown, cookie?: string) => call("POST", path, body, cookie);
const cookieOf = (answer: Answer) => (answer.headers.get("set-cookie") ?? "").split(";")[0] ?? "";

/** A person with an account (e-mail and password) and a Core API client of an API token of theirs. */
interface Person extends AccountHolder {
  token: string;
  api: ApiClient;
}
async function newPerson(label = "recovery"): Promise<Person> {
  const holder = await newAccountHolder(label);
  const { token } = await issueToken(holder.userId, { tokenName: "laptop" });
  return { ...holder, token, api: apiClient(stack.baseUrl, token) };
}

async function signIn(person: AccountHolder, password = person.password): Promise<string> {
  const answer = await post("/auth/sign-in", { email: person.email, password });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return cookieOf(answer);
}

const formPost = (path: string, fields: Record<string, string>) =>
  fetch(`${mcpOrigin}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields),
    redirect: "manual",
  });

/** An MCP agent the person approved on the consent page: its access and refresh tokens. */
async function mcpGrant(person: AccountHolder) {
  const registered = (await (
    await fetch(`${mcpOrigin}/oauth/register`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "Recovery agent" }),
    })
  ).json()) as Record<string, any>;
  const clientId = String(registered.client_id);
  const verifier = randomBytes(32).toString("base64url");
  const params = {
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    state: "s",
    resource: stack.mcpUrl,
  };
  const approved = await formPost("/oauth/authorize", {
    ...params,
    email: person.email,
    password: person.password,
    consent: "approve",
  });
  expect([302, 303], await approved.text()).toContain(approved.status);
  const code = new URL(approved.headers.get("location") ?? "").searchParams.get("code") ?? "";
  const exchanged = await formPost("/oauth/token", {
    grant_type: "authorization_code",
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
  });
  expect(exchanged.status).toBe(200);
  const tokens = (await exchanged.json()) as Record<string, string>;
  return { clientId, accessToken: String(tokens.access_token), refreshToken: String(tokens.refresh_token) };
}

type Grant = Awaited<ReturnType<typeof mcpGrant>>;

/** The MCP endpoint's answer to a tools/list with the grant's access token. */
const mcpStatus = async (grant: Grant) =>
  (
    await fetch(stack.mcpUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${grant.accessToken}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    })
  ).status;

/** Refresh with the grant's refresh token: the status and the OAuth error, if any. */
async function refresh(grant: Grant) {
  const answer = await formPost("/oauth/token", {
    grant_type: "refresh_token",
    refresh_token: grant.refreshToken,
    client_id: grant.clientId,
  });
  const body = (await answer.json()) as Record<string, any>;
  return { status: answer.status, error: body.error as string | undefined };
}

/** Forgot-password, then the reset with the e-mailed code: the reset's answer. */
async function resetPassword(person: AccountHolder, password = strongPassword()): Promise<Answer> {
  expect((await post("/auth/forgot-password", { email: person.email })).status).toBe(200);
  const messages = (await sentEmails(person.email)).filter((m) => m.subject === "Reset your password");
  const code = /code is (\d{6})/.exec((messages.at(-1)?.body ?? "").replace(/<[^>]*>/g, ""))?.[1];
  expect(code).toBeDefined();
  const answer = await post("/auth/reset-password", { email: person.email, code, password });
  person.password = password;
  return answer;
}

describe("a password reset ends every way in", () => {
  it("revokes the API tokens and the MCP grants made before it: the token is 401, the refresh token invalid_grant, the access token refused", async () => {
    const person = await newPerson();
    const grant = await mcpGrant(person);
    const session = await signIn(person);
    // Before: everything works.
    expect((await person.api.get("/api/users")).status).toBe(200);
    expect(await mcpStatus(grant)).toBe(200);

    const reset = await resetPassword(person);
    expect(reset.status, JSON.stringify(reset.body)).toBe(200);

    expect((await call("GET", "/auth/session", undefined, session)).status).toBe(401);
    expect((await person.api.get("/api/users")).status).toBe(401);
    expect(await mcpStatus(grant)).toBe(401);
    expect(await refresh(grant)).toEqual({ status: 400, error: "invalid_grant" });
  });
});
