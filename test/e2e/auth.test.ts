/** Core API authentication (spec 5.1, section 7) over real HTTP against the local stack. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { hashToken, issueToken, revokeToken } from "#lib/domain/tokens.ts";
import { UNAUTHORIZED_MESSAGE } from "#lib/infra/api-manifest.ts";
import { apiClient, startTestStack, storedItem, type TestStack, type TestUser } from "../support/stack.ts";

let stack: TestStack;
let user: TestUser;

beforeAll(async () => {
  stack = await startTestStack();
  user = await stack.newUser();
});
afterAll(async () => {
  await stack?.stop();
});

/** Every 401 says how to send the token: as it is, without `Bearer` (issue 19). */
const UNAUTHORIZED = { message: UNAUTHORIZED_MESSAGE };

/** The token id of a raw token, from its stored item. */
async function tokenIdOf(raw: string): Promise<string> {
  const item = await storedItem(keys.userToken(hashToken(raw)));
  expect(item).toBeDefined();
  return String(item?.tokenId);
}

describe("Authorization header", () => {
  it("accepts the raw token (no Bearer) and answers the caller's own user", async () => {
    const response = await user.api.get("/api/users");
    expect(response.status).toBe(200);
    expect(response.body.users).toHaveLength(1);
    expect(response.body.users[0].userId).toBe(user.userId);
  });

  it("answers 401 {message: Unauthorized} when the header is missing", async () => {
    const response = await stack.anonymous.get("/api/users");
    expect(response.status).toBe(401);
    expect(response.body).toEqual(UNAUTHORIZED);
    const write = await stack.anonymous.post("/api/clients", { clientName: "Sneaky" });
    expect(write.status).toBe(401);
    expect(write.body).toEqual(UNAUTHORIZED);
  });

  it.each([
    ["garbage", "not-a-token"],
    ["an empty-looking value", "   "],
    ["a well-formed but unknown token", `u-${"A".repeat(43)}`],
    ["a token with the wrong prefix", `x-${"A".repeat(43)}`],
  ])("answers 401 for %s", async (_label, token) => {
    const response = await apiClient(stack.baseUrl, token).get("/api/users");
    expect(response.status).toBe(401);
    expect(response.body).toEqual(UNAUTHORIZED);
  });

  it("answers 401 for a valid token sent as `Bearer <token>` (the Core API takes the raw token)", async () => {
    for (const value of [`Bearer ${user.token}`, `bearer ${user.token}`]) {
      const response = await apiClient(stack.baseUrl, value).get("/api/users");
      expect(response.status).toBe(401);
      expect(response.body).toEqual(UNAUTHORIZED);
      // The message says what to do (issue 19: a bare "Unauthorized" left the caller guessing).
      expect(response.body.message).toContain("without the Bearer prefix");
    }
    // The same token without the prefix still works.
    expect((await user.api.get("/api/users")).status).toBe(200);
  });

  it("answers 401 for a revoked token, while the user's other tokens keep working", async () => {
    const victim = await stack.newUser();
    const second = await issueToken(victim.userId);
    expect((await victim.api.get("/api/users")).status).toBe(200);

    await revokeToken(victim.userId, await tokenIdOf(victim.token));

    const response = await victim.api.get("/api/users");
    expect(response.status).toBe(401);
    expect(response.body).toEqual(UNAUTHORIZED);
    expect(await storedItem(keys.userToken(hashToken(victim.token)))).toBeUndefined();
    const stored = await storedItem(keys.user(victim.userId));
    expect(Object.keys(stored?.tokens ?? {})).toEqual([second.tokenId]);

    const other = await apiClient(stack.baseUrl, second.token).get("/api/users");
    expect(other.status).toBe(200);
    expect(other.body.users[0].userId).toBe(victim.userId);
  });
});

describe("token storage and display", () => {
  it("stores only the SHA-256 of a token: the raw token is in no stored item", async () => {
    const holder = await stack.newUser();
    const hash = hashToken(holder.token);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);

    const tokenItem = await storedItem(keys.userToken(hash));
    expect(tokenItem).toMatchObject({ pKey: `TOKEN#${hash}`, userId: holder.userId });
    const userItem = await storedItem(keys.user(holder.userId));
    expect(userItem).toBeDefined();
    const tokenRefs = Object.values((userItem?.tokens ?? {}) as Record<string, { hash: string }>);
    expect(tokenRefs.map((ref) => ref.hash)).toEqual([hash]);

    // No stretch of the raw token (beyond the 4 characters the masked form shows) appears anywhere.
    const secret = holder.token.slice("u-".length);
    for (const item of [tokenItem, userItem]) {
      const json = JSON.stringify(item);
      expect(json).not.toContain(holder.token);
      for (let i = 0; i + 12 <= secret.length; i++) expect(json).not.toContain(secret.slice(i, i + 12));
    }
  });

  it("shows userTokens masked on GET /api/users, never the raw token", async () => {
    const holder = await stack.newUser();
    const second = await issueToken(holder.userId);
    const response = await holder.api.get("/api/users");
    expect(response.status).toBe(200);
    const shown = response.body.users[0].userTokens as string[];
    expect(shown).toHaveLength(2);
    expect([...shown].sort()).toEqual(
      [`u-…${holder.token.slice(-4)}`, `u-…${second.token.slice(-4)}`].sort(),
    );
    const json = JSON.stringify(response.body);
    expect(json).not.toContain(holder.token);
    expect(json).not.toContain(second.token);
    expect(json).not.toContain(hashToken(holder.token));
    expect(json).not.toContain(hashToken(second.token));
  });
});

describe("routing", () => {
  it("answers 404 {message: Route not found} for an unknown route, with or without a token", async () => {
    for (const [api, method, path] of [
      [user.api, "GET", "/api/nothing-here"],
      [user.api, "GET", "/api/users/x/y/z/w"],
      [stack.anonymous, "GET", "/api/nothing-here"],
    ] as const) {
      const response = await api.request(method, path);
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body).toEqual({ message: "Route not found" });
    }
  });
});

describe("revocation (the authorizer runs for every request, without a cache)", () => {
  it("a revoked token is refused on its next request, by the authorizer", async () => {
    const holder = await stack.newUser();
    const api = apiClient(stack.baseUrl, holder.token);
    expect((await api.get("/api/users")).status).toBe(200);

    await revokeToken(holder.userId, await tokenIdOf(holder.token));
    expect(await storedItem(keys.userToken(hashToken(holder.token)))).toBeUndefined();

    const afterRevoke = await api.get("/api/users");
    expect(afterRevoke.status).toBe(401);
    expect(afterRevoke.body).toEqual(UNAUTHORIZED);

    // A token that was never seen before is refused too.
    const fresh = await apiClient(stack.baseUrl, `u-${"B".repeat(43)}`).get("/api/users");
    expect(fresh.status).toBe(401);
  });

  it("revoking one of a user's tokens refuses it at once, while their other token keeps working", async () => {
    const holder = await stack.newUser();
    const second = await issueToken(holder.userId);
    const api = apiClient(stack.baseUrl, holder.token);
    const other = apiClient(stack.baseUrl, second.token);
    expect((await api.get("/api/users")).status).toBe(200);
    expect((await other.get("/api/users")).status).toBe(200);
    await revokeToken(holder.userId, second.tokenId);
    expect((await other.get("/api/users")).status).toBe(401);
    expect((await api.get("/api/users")).status).toBe(200);
  });
});
