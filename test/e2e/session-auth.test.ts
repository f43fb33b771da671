/**
 * Cookie sessions authenticate the Core API (issue 21), over real HTTP against the local stack:
 * the session cookie is accepted on every route as a token is (same roles, same rate limit), a
 * cookie-authenticated unsafe request must carry this service's own Origin (CSRF), the public
 * /auth/* operations refuse a foreign Origin, and a revoked session or token is refused on its
 * next request (the REQUEST authorizer runs for every request, without a cache).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FOREIGN_ORIGIN_MESSAGE, NOT_SELF_MESSAGE, SESSION_ORIGIN_MESSAGE } from "#lib/api/dispatch.ts";
import { getConfig } from "#lib/config.ts";
import { UNAUTHORIZED_MESSAGE } from "#lib/infra/api-manifest.ts";
import { latestEmailedCode, send, signedInUser, signIn, TEST_PASSWORD } from "../support/sessions.ts";
import { apiClient, createClientFor, startTestStack, type TestStack } from "../support/stack.ts";

const FOREIGN = "https://evil.example";
const UNAUTHORIZED = { message: UNAUTHORIZED_MESSAGE };

let stack: TestStack;
let appOrigin: string;
let apiOrigin: string;

beforeAll(async () => {
  stack = await startTestStack();
  appOrigin = new URL(getConfig().appUrl).origin;
  apiOrigin = new URL(stack.baseUrl).origin;
});
afterAll(async () => {
  await stack?.stop();
});

/** A request with the session cookie (and an Origin when given). */
const withCookie = (
  cookie: string,
  method: string,
  path: string,
  options: { body?: unknown; origin?: string; headers?: Record<string, string> } = {},
) =>
  send(stack.baseUrl, method, path, {
    body: options.body,
    headers: {
      Cookie: cookie,
      ...(options.origin ? { Origin: options.origin } : {}),
      ...options.headers,
    },
  });

describe("the session cookie authenticates the Core API as a token does", () => {
  it("GET /api/users/{self} answers 200 with the cookie alone; another user's id is 403 as with a token", async () => {
    const user = await signedInUser(stack);
    const self = await withCookie(user.cookie, "GET", `/api/users/${user.userId}`);
    expect(self.status, JSON.stringify(self.body)).toBe(200);
    expect(self.body.users[0]).toMatchObject({ userId: user.userId, userEmail: user.email });

    const other = await stack.newUser();
    const byCookie = await withCookie(user.cookie, "GET", `/api/users/${other.userId}`);
    const byToken = await user.api.get(`/api/users/${other.userId}`);
    expect(byCookie.status).toBe(403);
    expect(byCookie.body).toMatchObject({ message: NOT_SELF_MESSAGE });
    expect({ status: byToken.status, message: byToken.body.message }).toEqual({
      status: byCookie.status,
      message: byCookie.body.message,
    });
  });

  it("a client route: the member's cookie gets what their token gets, a non-member's cookie what their token gets", async () => {
    const owner = await signedInUser(stack);
    const stranger = await signedInUser(stack);
    const clientId = await createClientFor(owner, "Cookie Co");
    const path = `/api/clients/${clientId}`;

    const ownerByCookie = await withCookie(owner.cookie, "GET", path);
    const ownerByToken = await owner.api.get(path);
    expect(ownerByCookie.status).toBe(200);
    expect(ownerByCookie.body).toEqual(ownerByToken.body);

    for (const [method, body] of [
      ["GET", undefined],
      ["PUT", { clientName: "Taken over" }],
      ["DELETE", undefined],
    ] as const) {
      const byCookie = await withCookie(stranger.cookie, method, path, { body, origin: appOrigin });
      const byToken = await stranger.api.request(method, path, body);
      expect(byCookie.status, `${method} ${JSON.stringify(byCookie.body)}`).toBe(byToken.status);
      expect([403, 404]).toContain(byCookie.status);
      expect(byCookie.body.message).toBe((byToken.body as { message: string }).message);
    }
    expect((await owner.api.get(path)).body.clients[0].clientName).toBe("Cookie Co");
  });

  it("carries the same rate limit as a token, in one window per user shared by their sessions", async () => {
    const user = await signedInUser(stack);
    const second = await signIn(stack.baseUrl, user.email);
    const byToken = await user.api.get("/api/users");
    const first = await withCookie(user.cookie, "GET", "/api/users");
    const next = await withCookie(second, "GET", "/api/users");
    expect(first.status).toBe(200);
    const limit = byToken.headers.get("x-ratelimit-limit");
    expect(limit).toMatch(/^\d+$/);
    expect(first.headers.get("x-ratelimit-limit")).toBe(limit);
    expect(next.headers.get("x-ratelimit-limit")).toBe(limit);
    // The second session's request counts in the same (user's) window as the first's.
    expect(Number(next.headers.get("x-ratelimit-remaining"))).toBe(
      Number(first.headers.get("x-ratelimit-remaining")) - 1,
    );
  });

  it("without a cookie or token, or with a malformed or unknown cookie: 401 with the message", async () => {
    const user = await signedInUser(stack);
    const [name, value] = user.cookie.split("=") as [string, string];
    for (const cookie of [
      undefined,
      `${name}=garbage`,
      `${name}=${value.slice(0, -3)}AAA`,
      `other=${value}`,
    ]) {
      const answer = await send(stack.baseUrl, "GET", "/api/users", {
        headers: cookie ? { Cookie: cookie } : {},
      });
      expect(answer.status, String(cookie)).toBe(401);
      expect(answer.body).toEqual(UNAUTHORIZED);
    }
  });

  it("the __Host-session name (https) is accepted too", async () => {
    const user = await signedInUser(stack);
    const value = user.cookie.slice("session=".length);
    const answer = await send(stack.baseUrl, "GET", "/api/users", {
      headers: { Cookie: `theme=dark; __Host-session=${value}` },
    });
    expect(answer.status).toBe(200);
  });
});

describe("CSRF: a cookie-authenticated unsafe request needs this service's own Origin", () => {
  it("POST, PUT and DELETE without Origin or with a foreign one are 403; with the own Origin they succeed", async () => {
    const user = await signedInUser(stack);
    const tokensPath = `/api/users/${user.userId}/tokens`;

    for (const origin of [undefined, FOREIGN, "null", `${apiOrigin}.evil.example`]) {
      const created = await withCookie(user.cookie, "POST", "/api/clients", {
        body: { clientName: "Forged" },
        origin,
      });
      expect(created.status, String(origin)).toBe(403);
      expect(created.body).toMatchObject({ message: SESSION_ORIGIN_MESSAGE });
    }
    const listed = await user.api.get("/api/clients");
    expect(listed.body.clients).toEqual([]); // nothing was created by the refused requests

    // The web application's origin (APP_URL) and the API's own origin are both ours.
    const byApp = await withCookie(user.cookie, "POST", "/api/clients", {
      body: { clientName: "From the console" },
      origin: appOrigin,
    });
    expect(byApp.status, JSON.stringify(byApp.body)).toBe(201);
    const clientId = byApp.body.clients[0].clientId as string;
    const renamed = await withCookie(user.cookie, "PUT", `/api/clients/${clientId}`, {
      body: { clientName: "Renamed" },
      origin: apiOrigin,
    });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    expect(
      (
        await withCookie(user.cookie, "PUT", `/api/clients/${clientId}`, {
          body: { clientName: "Forged" },
          origin: FOREIGN,
        })
      ).status,
    ).toBe(403);

    const token = await withCookie(user.cookie, "POST", tokensPath, {
      body: { tokenName: "from a session" },
      origin: appOrigin,
    });
    expect(token.status, JSON.stringify(token.body)).toBe(201);
    const tokenId = token.body.tokens[0].tokenId as string;
    for (const origin of [undefined, FOREIGN]) {
      const refused = await withCookie(user.cookie, "DELETE", `${tokensPath}/${tokenId}`, { origin });
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ message: SESSION_ORIGIN_MESSAGE });
    }
    const deleted = await withCookie(user.cookie, "DELETE", `${tokensPath}/${tokenId}`, {
      origin: appOrigin,
    });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
  });

  it("a safe method needs no Origin, whatever it says", async () => {
    const user = await signedInUser(stack);
    for (const origin of [undefined, FOREIGN])
      expect((await withCookie(user.cookie, "GET", "/api/users", { origin })).status).toBe(200);
  });

  it("a token request is unaffected: no Origin needed, and a foreign one is no reason to refuse", async () => {
    const user = await signedInUser(stack);
    expect((await user.api.post("/api/clients", { clientName: "By token" })).status).toBe(201);
    const withForeign = await send(stack.baseUrl, "POST", "/api/clients", {
      body: { clientName: "By token, foreign page" },
      headers: { Authorization: user.token, Origin: FOREIGN },
    });
    expect(withForeign.status).toBe(201);
  });

  it("with both a token and the cookie, the token decides: no Origin check; an invalid token is 401 whatever the cookie", async () => {
    const user = await signedInUser(stack);
    const both = await withCookie(user.cookie, "POST", "/api/clients", {
      body: { clientName: "Both" },
      headers: { Authorization: user.token },
    });
    expect(both.status, JSON.stringify(both.body)).toBe(201);
    const badToken = await withCookie(user.cookie, "GET", "/api/users", {
      headers: { Authorization: `u-${"Z".repeat(43)}` },
    });
    expect(badToken.status).toBe(401);
    expect(badToken.body).toEqual(UNAUTHORIZED);
  });
});

describe("the public /auth/* operations refuse a foreign Origin", () => {
  it("POST /auth/sign-in from another site's page is 403; from ours or without Origin it signs in", async () => {
    const user = await signedInUser(stack);
    const body = { email: user.email, password: TEST_PASSWORD };
    const foreign = await send(stack.baseUrl, "POST", "/auth/sign-in", {
      body,
      headers: { Origin: FOREIGN },
    });
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatchObject({ message: FOREIGN_ORIGIN_MESSAGE });
    expect(foreign.headers.get("set-cookie")).toBeNull();
    const own = await send(stack.baseUrl, "POST", "/auth/sign-in", { body, headers: { Origin: appOrigin } });
    expect(own.status).toBe(200);
  });

  it("POST /auth/sign-out and DELETE /auth/sessions/{id} from another site's page are 403 and the session still works", async () => {
    const user = await signedInUser(stack);
    const signOut = await withCookie(user.cookie, "POST", "/auth/sign-out", { origin: FOREIGN });
    expect(signOut.status).toBe(403);
    expect(signOut.body).toMatchObject({ message: FOREIGN_ORIGIN_MESSAGE });
    const sessions = await withCookie(user.cookie, "GET", "/auth/sessions");
    expect(sessions.status).toBe(200);
    const sessionId = sessions.body.sessions[0].sessionId as string;
    const revoke = await withCookie(user.cookie, "DELETE", `/auth/sessions/${sessionId}`, {
      origin: FOREIGN,
    });
    expect(revoke.status).toBe(403);
    expect((await withCookie(user.cookie, "GET", "/api/users")).status).toBe(200);
    expect((await withCookie(user.cookie, "GET", "/auth/session")).status).toBe(200);
  });
});

describe("revocation: the next request is refused", () => {
  it("after sign-out, the same cookie is 401 on the Core API", async () => {
    const user = await signedInUser(stack);
    expect((await withCookie(user.cookie, "GET", "/api/users")).status).toBe(200);
    expect((await withCookie(user.cookie, "POST", "/auth/sign-out", { origin: appOrigin })).status).toBe(200);
    const after = await withCookie(user.cookie, "GET", "/api/users");
    expect(after.status).toBe(401);
    expect(after.body).toEqual(UNAUTHORIZED);
  });

  it("after a password reset, every session's cookie is 401, and the API token too", async () => {
    const user = await signedInUser(stack);
    const second = await signIn(stack.baseUrl, user.email);
    for (const cookie of [user.cookie, second])
      expect((await withCookie(cookie, "GET", "/api/users")).status).toBe(200);
    await send(stack.baseUrl, "POST", "/auth/forgot-password", { body: { email: user.email } });
    const code = await latestEmailedCode(user.email, "Reset your password");
    const reset = await send(stack.baseUrl, "POST", "/auth/reset-password", {
      body: { email: user.email, code, password: "another long passphrase" },
    });
    expect(reset.status).toBe(200);
    for (const cookie of [user.cookie, second])
      expect((await withCookie(cookie, "GET", "/api/users")).status).toBe(401);
    expect(reset.body.revoked).toEqual({ sessions: 2, tokens: 1, grants: 0 });
    expect((await user.api.get("/api/users")).status).toBe(401);
  });

  it("DELETE /auth/sessions/{id} of another session: that session is 401 on its next request, this one still works", async () => {
    const user = await signedInUser(stack);
    const other = await signIn(stack.baseUrl, user.email);
    expect((await withCookie(other, "GET", "/api/users")).status).toBe(200);
    const listed = await withCookie(user.cookie, "GET", "/auth/sessions");
    const otherSession = (listed.body.sessions as { sessionId: string; current: boolean }[]).find(
      (session) => !session.current,
    );
    expect(otherSession).toBeDefined();
    const revoked = await withCookie(user.cookie, "DELETE", `/auth/sessions/${otherSession?.sessionId}`, {
      origin: appOrigin,
    });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    const after = await withCookie(other, "GET", "/api/users");
    expect(after.status).toBe(401);
    expect(after.body).toEqual(UNAUTHORIZED);
    expect((await withCookie(user.cookie, "GET", "/api/users")).status).toBe(200);
  });

  it("a deleted token is 401 on its next request", async () => {
    const user = await signedInUser(stack);
    const made = await user.api.post(`/api/users/${user.userId}/tokens`, { tokenName: "short-lived" });
    expect(made.status).toBe(201);
    const { token, tokenId } = made.body.tokens[0] as { token: string; tokenId: string };
    const api = apiClient(stack.baseUrl, token);
    expect((await api.get("/api/users")).status).toBe(200);
    const deleted = await withCookie(user.cookie, "DELETE", `/api/users/${user.userId}/tokens/${tokenId}`, {
      origin: appOrigin,
    });
    expect(deleted.status).toBe(200);
    const after = await api.get("/api/users");
    expect(after.status).toBe(401);
    expect(after.body).toEqual(UNAUTHORIZED);
  });
});
