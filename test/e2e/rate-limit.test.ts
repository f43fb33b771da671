/** Core API rate limit per user token (section 8) over real HTTP against the local stack. */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { keys } from "#lib/db/keys.ts";
import { hashToken, issueToken } from "#lib/domain/tokens.ts";
import { MINUTE_MS, TestClock } from "../support/clock.ts";
import {
  type ApiResult,
  apiClient,
  createClientFor,
  joinClient,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

let stack: TestStack;
/** Counting is per fixed one-minute window: bursts start 1 s into a fresh minute of this clock. */
const clock = new TestClock();

beforeAll(async () => {
  stack = await startTestStack({ clock: clock.now });
});
afterAll(async () => {
  await stack?.stop();
});

const windowOf = (ms: number) => Math.floor(ms / MINUTE_MS);

async function setPlan(clientId: string, planTier: string, planStatus = "active") {
  await dynamo(getConfig().homeRegion).send(
    new UpdateCommand({
      TableName: getConfig().tableName,
      Key: keys.clientConfig(clientId),
      UpdateExpression: "SET planTier = :tier, planStatus = :status",
      ConditionExpression: "attribute_exists(pKey)",
      ExpressionAttributeValues: { ":tier": planTier, ":status": planStatus },
    }),
  );
}

const limitOf = (response: ApiResult) => response.headers.get("x-ratelimit-limit");

describe("basic plan: 100 requests per minute per token", () => {
  it("of 150 parallel requests exactly 100 succeed and 50 get 429 with Retry-After", async () => {
    const user = await stack.newUser();
    clock.toNextWindow();
    const windowBefore = windowOf(clock.now());

    const responses = await Promise.all(Array.from({ length: 150 }, () => user.api.get("/api/users")));
    const windowAfter = windowOf(clock.now());
    expect(windowAfter, "the burst must finish inside one window").toBe(windowBefore);

    const ok = responses.filter((r) => r.status === 200);
    const limited = responses.filter((r) => r.status === 429);
    expect(responses.map((r) => r.status).filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(ok).toHaveLength(100);
    expect(limited).toHaveLength(50);

    // Every success carries the limit and what is left of it in this window. (Real DynamoDB returns
    // each update's own count, so these would be 99..0 exactly once each; moto serialises the live
    // item after the update, so racing requests can report the same count: only the range is checked.)
    for (const response of ok) {
      expect(response.body.users[0].userId).toBe(user.userId);
      expect(limitOf(response)).toBe("100");
      const remaining = response.headers.get("x-ratelimit-remaining");
      expect(remaining).toMatch(/^\d+$/);
      expect(Number(remaining)).toBeLessThanOrEqual(99);
    }
    expect(ok.some((r) => r.headers.get("x-ratelimit-remaining") === "0")).toBe(true);

    const secondsToWindowEnd = Math.ceil((MINUTE_MS - (clock.now() % MINUTE_MS)) / 1000);
    for (const response of limited) {
      const retryAfter = response.headers.get("retry-after");
      expect(retryAfter).toMatch(/^\d+$/);
      const seconds = Number(retryAfter);
      expect(seconds).toBeGreaterThanOrEqual(1);
      expect(seconds).toBeLessThanOrEqual(60);
      // It points at the end of the current window (give or take the burst's duration).
      expect(seconds).toBeGreaterThanOrEqual(secondsToWindowEnd);
      expect(typeof response.body.message).toBe("string");
      expect(response.body.message.length).toBeGreaterThan(0);
      expect(response.headers.get("x-ratelimit-limit")).toBe("100");
      expect(response.headers.get("x-ratelimit-remaining")).toBe("0");
    }

    // The counter is one item per token and window.
    const tokenItem = await storedItem(keys.userToken(hashToken(user.token)));
    const counter = await storedItem(
      keys.rateWindow(`TOKEN#${String(tokenItem?.tokenId)}`, windowBefore * MINUTE_MS),
    );
    expect(counter?.requestCount).toBe(100);

    // The limit is per token: another token of the same user has its own budget ...
    const second = await issueToken(user.userId);
    const other = await apiClient(stack.baseUrl, second.token).get("/api/users");
    expect(other.status).toBe(200);
    expect(limitOf(other)).toBe("100");
    expect(other.headers.get("x-ratelimit-remaining")).toBe("99");
    // ... while the first one is still throttled in this window.
    expect(windowOf(clock.now())).toBe(windowBefore);
    const again = await user.api.get("/api/users");
    expect(again.status).toBe(429);
    expect(again.headers.get("retry-after")).toMatch(/^\d+$/);
    // In the next window, it has its budget again.
    clock.toNextWindow();
    const next = await user.api.get("/api/users");
    expect(next.status).toBe(200);
    expect(next.headers.get("x-ratelimit-remaining")).toBe("99");
  });

  it("a user without any client gets the basic limit", async () => {
    const user = await stack.newUser();
    const response = await user.api.get("/api/users");
    expect(response.status).toBe(200);
    expect(limitOf(response)).toBe("100");
    expect(Number(response.headers.get("x-ratelimit-remaining"))).toBe(99);
  });
});

describe("plans: the most generous plan among the user's clients", () => {
  it("a member of a team-plan client gets 1000 requests per minute", async () => {
    const user = await stack.newUser();
    const clientId = await createClientFor(user, "Team Co");
    expect(limitOf(await user.api.get("/api/users"))).toBe("100"); // basic until upgraded

    await setPlan(clientId, "team");
    expect((await storedItem(keys.clientConfig(clientId)))?.planTier).toBe("team");
    const response = await user.api.get("/api/users");
    expect(response.status).toBe(200);
    expect(limitOf(response)).toBe("1000");
    expect(Number(response.headers.get("x-ratelimit-remaining"))).toBeGreaterThan(900);
  });

  it("a user in a basic client and a team client gets 1000", async () => {
    const user = await stack.newUser();
    const basicClient = await createClientFor(user, "Small Co");
    const teamOwner: TestUser = await stack.newUser();
    const teamClient = await createClientFor(teamOwner, "Big Co");
    await setPlan(teamClient, "team");
    expect(limitOf(await user.api.get("/api/users"))).toBe("100");

    await joinClient(teamOwner, teamClient, user, "user");
    const stored = await storedItem(keys.user(user.userId));
    expect([...((stored?.userClients as Set<string>) ?? [])].sort()).toEqual(
      [basicClient, teamClient].sort(),
    );
    expect((await storedItem(keys.clientConfig(basicClient)))?.planTier).toBe("basic");

    const response = await user.api.get("/api/users");
    expect(response.status).toBe(200);
    expect(limitOf(response)).toBe("1000");
    // The team client's owner is on the team plan too; a basic-only user is not.
    expect(limitOf(await teamOwner.api.get("/api/users"))).toBe("1000");
  });

  it("an expired team plan falls back to basic", async () => {
    const user = await stack.newUser();
    const clientId = await createClientFor(user, "Lapsed Co");
    await setPlan(clientId, "team", "expired");
    expect(limitOf(await user.api.get("/api/users"))).toBe("100");
  });
});
