/**
 * Self-service API tokens (issue 21) over real HTTP against the local stack: one test per line of
 * the contract. GET, POST /api/users/{userId}/tokens and DELETE .../tokens/{tokenId}: the listing
 * without secrets, the creation answer, the 20-token cap (sequential and under concurrency),
 * another user's id refused, a revoked token refused on its very next request with the
 * authorizer as deployed (invoked for every request, no cache), `tokenLastUsed` stamped at most once a minute,
 * and a raw token never in a log line or a stored item (request logs included).
 */
import { DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NOT_SELF_MESSAGE } from "#lib/api/dispatch.ts";
import { dynamo } from "#lib/aws/clients.ts";
import { getConfig } from "#lib/config.ts";
import { keys } from "#lib/db/keys.ts";
import {
  hashToken,
  LAST_USED_PRECISION_MS,
  listUserTokens,
  MAX_TOKENS_PER_USER,
} from "#lib/domain/tokens.ts";
import { UNAUTHORIZED_MESSAGE } from "#lib/infra/api-manifest.ts";
import { TestClock } from "../support/clock.ts";
import { apiClient, startTestStack, storedItem, type TestStack, type TestUser } from "../support/stack.ts";

const UNAUTHORIZED = { message: UNAUTHORIZED_MESSAGE };
const clock = new TestClock();
let stack: TestStack;
/** Every raw token this file saw, to search the logs and the tables for at the end. */
const rawTokens = new Set<string>();
const logLines: string[] = [];
const realStdout = process.stdout.write.bind(process.stdout);
const realStderr = process.stderr.write.bind(process.stderr);

beforeAll(async () => {
  // Capture every line the in-process handlers log (at debug level), to search them for tokens.
  process.env.LOG_LEVEL = "debug";
  const capture = (chunk: unknown) => {
    logLines.push(String(chunk));
    return true;
  };
  process.stdout.write = capture as typeof process.stdout.write;
  process.stderr.write = capture as typeof process.stderr.write;
  stack = await startTestStack({ clock: clock.now });
});
afterAll(async () => {
  process.stdout.write = realStdout;
  process.stderr.write = realStderr;
  await stack?.stop();
});

const tokensPath = (user: { userId: string }) => `/api/users/${user.userId}/tokens`;

/** A new user (holding the one token the test stack issues them), remembered for the secret search. */
async function newUser(): Promise<TestUser> {
  const user = await stack.newUser();
  rawTokens.add(user.token);
  return user;
}

/** Create a token over HTTP; answers the 201's one token. */
async function createToken(user: TestUser, tokenName: string) {
  const response = await user.api.post(tokensPath(user), { tokenName });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  const [token] = response.body.tokens;
  rawTokens.add(token.token);
  return token as {
    tokenId: string;
    tokenName: string;
    token: string;
    tokenPreview: string;
    tokenCreated: string;
  };
}

describe("GET /api/users/{userId}/tokens", () => {
  it("lists id, name, preview, creation and last use of each token, and never a token's value or hash", async () => {
    const user = await newUser();
    const made = await createToken(user, "ci pipeline");
    const response = await user.api.get(tokensPath(user));
    expect(response.status).toBe(200);
    expect(response.body.message).toEqual(expect.any(String));
    const tokens = response.body.tokens as Record<string, unknown>[];
    expect(tokens).toHaveLength(2);
    for (const token of tokens)
      expect(Object.keys(token).sort()).toEqual(
        ["tokenCreated", "tokenId", "tokenLastUsed", "tokenName", "tokenPreview"].sort(),
      );
    // Oldest first: the stack's token (issued without a name, already used), then the new one.
    expect(tokens[0]).toMatchObject({
      tokenName: "",
      tokenPreview: `u-…${user.token.slice(-4)}`,
      tokenLastUsed: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(tokens[1]).toEqual({
      tokenId: made.tokenId,
      tokenName: "ci pipeline",
      tokenPreview: `u-…${made.token.slice(-4)}`,
      tokenCreated: made.tokenCreated,
      tokenLastUsed: null,
    });
    const text = JSON.stringify(response.body);
    for (const raw of [user.token, made.token]) {
      expect(text).not.toContain(raw);
      expect(text).not.toContain(hashToken(raw));
    }
  });
});

describe("POST /api/users/{userId}/tokens", () => {
  it("answers 201 with the new token, `u-...`, once; the token works at once", async () => {
    const user = await newUser();
    const response = await user.api.post(tokensPath(user), { tokenName: "  laptop  " });
    expect(response.status).toBe(201);
    expect(response.body.tokens).toHaveLength(1);
    const [made] = response.body.tokens;
    rawTokens.add(made.token);
    expect(Object.keys(made).sort()).toEqual(
      ["token", "tokenCreated", "tokenId", "tokenName", "tokenPreview"].sort(),
    );
    expect(made).toMatchObject({
      tokenId: expect.stringMatching(/^tok_[0-9a-f]{16}$/),
      tokenName: "laptop",
      token: expect.stringMatching(/^u-[A-Za-z0-9_-]{43}$/),
      tokenCreated: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(made.tokenPreview).toBe(`u-…${made.token.slice(-4)}`);
    // Only the hash is stored.
    expect(await storedItem(keys.userToken(hashToken(made.token)))).toMatchObject({
      tokenId: made.tokenId,
      userId: user.userId,
    });
    const withNew = await apiClient(stack.baseUrl, made.token).get("/api/users");
    expect(withNew.status).toBe(200);
    expect(withNew.body.users[0].userId).toBe(user.userId);
  });

  it("answers 400 naming tokenName when it is missing, empty or too long, or naming another field sent", async () => {
    const user = await newUser();
    for (const [body, field] of [
      [{}, "tokenName"],
      [{ tokenName: "   " }, "tokenName"],
      [{ tokenName: "x".repeat(101) }, "tokenName"],
      [{ tokenName: "a", token: "u-x" }, "token"],
    ] as const) {
      const response = await user.api.post(tokensPath(user), body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      const named = JSON.stringify(response.body);
      expect(named, JSON.stringify(body)).toContain(`"${field}`);
      if (field === "token") expect(named).toContain("is not a field that can be set here");
    }
    expect(await listUserTokens(user.userId)).toHaveLength(1);
  });

  it(`refuses the ${MAX_TOKENS_PER_USER + 1}st token with a 400 and a message`, async () => {
    expect(MAX_TOKENS_PER_USER).toBe(20);
    const user = await newUser();
    for (let i = 2; i <= MAX_TOKENS_PER_USER; i++) await createToken(user, `token ${i}`);
    const refused = await user.api.post(tokensPath(user), { tokenName: "one too many" });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe(
      "A user can hold at most 20 API tokens; revoke one before creating another",
    );
    const listed = await user.api.get(tokensPath(user));
    expect(listed.body.tokens).toHaveLength(MAX_TOKENS_PER_USER);
    // Revoking one makes room for one.
    const last = listed.body.tokens[MAX_TOKENS_PER_USER - 1];
    expect((await user.api.delete(`${tokensPath(user)}/${last.tokenId}`)).status).toBe(200);
    await createToken(user, "in its place");
  });

  it("of 25 parallel creates by a user holding 1 token, exactly 19 succeed: the user then holds exactly 20", async () => {
    const user = await newUser();
    const answers = await Promise.all(
      Array.from({ length: 25 }, (_, i) => user.api.post(tokensPath(user), { tokenName: `parallel ${i}` })),
    );
    for (const answer of answers) if (answer.status === 201) rawTokens.add(answer.body.tokens[0].token);
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(MAX_TOKENS_PER_USER - 1);
    expect(statuses.filter((status) => status === 400)).toHaveLength(25 - (MAX_TOKENS_PER_USER - 1));
    expect(await listUserTokens(user.userId)).toHaveLength(MAX_TOKENS_PER_USER);
    // Every token the user item lists has its token item, and no orphan was left by a refusal.
    const user2 = await storedItem(keys.user(user.userId));
    for (const ref of Object.values(user2?.tokens as Record<string, { hash: string }>))
      expect(await storedItem(keys.userToken(ref.hash))).toBeDefined();
  });
});

describe("another user's tokens", () => {
  it("answers 403 to GET, POST and DELETE on another user's id, and changes nothing", async () => {
    const [victim, attacker] = await Promise.all([newUser(), newUser()]);
    const victimToken = await createToken(victim, "victim's");
    const before = await listUserTokens(victim.userId);
    const answers = await Promise.all([
      attacker.api.get(tokensPath(victim)),
      attacker.api.post(tokensPath(victim), { tokenName: "planted" }),
      attacker.api.delete(`${tokensPath(victim)}/${victimToken.tokenId}`),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe(403);
      expect(answer.body).toEqual({ message: NOT_SELF_MESSAGE });
    }
    // The victim's token id under the attacker's own path is not theirs: 404, nothing revoked.
    const crossed = await attacker.api.delete(`${tokensPath(attacker)}/${victimToken.tokenId}`);
    expect(crossed.status).toBe(404);
    expect(await listUserTokens(victim.userId)).toEqual(before);
    expect((await apiClient(stack.baseUrl, victimToken.token).get("/api/users")).status).toBe(200);
  });
});

describe("DELETE /api/users/{userId}/tokens/{tokenId}", () => {
  it("refuses the revoked token on its very next request", async () => {
    const user = await newUser();
    const other = await createToken(user, "to revoke");
    const otherApi = apiClient(stack.baseUrl, other.token);
    expect((await otherApi.get("/api/users")).status).toBe(200);
    expect((await otherApi.get(tokensPath(user))).status).toBe(200);

    const revoked = await user.api.delete(`${tokensPath(user)}/${other.tokenId}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ message: "Token revoked" });

    for (const request of [
      () => otherApi.get("/api/users"),
      () => otherApi.post("/api/clients", { clientName: "after revocation" }),
    ]) {
      const answer = await request();
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual(UNAUTHORIZED);
    }
    // The token that revoked it still works; the revoked one is gone from the listing.
    const listed = await user.api.get(tokensPath(user));
    expect(listed.status).toBe(200);
    expect(listed.body.tokens.map((token: { tokenId: string }) => token.tokenId)).not.toContain(
      other.tokenId,
    );
    // And it is gone: a second DELETE is a 404.
    expect((await user.api.delete(`${tokensPath(user)}/${other.tokenId}`)).status).toBe(404);
  });

  it("a token may revoke itself: its next request is a 401", async () => {
    const user = await newUser();
    const self = await createToken(user, "self");
    const api = apiClient(stack.baseUrl, self.token);
    expect((await api.delete(`${tokensPath(user)}/${self.tokenId}`)).status).toBe(200);
    const after = await api.get("/api/users");
    expect(after.status).toBe(401);
    expect(after.body).toEqual(UNAUTHORIZED);
  });
});

describe("tokenLastUsed", () => {
  const lastUsedOf = async (user: TestUser, tokenId: string) =>
    (await listUserTokens(user.userId)).find((token) => token.tokenId === tokenId)?.tokenLastUsed;

  it("is stamped on use, at most once a minute (not on each request), and again after a minute", async () => {
    const user = await newUser();
    const made = await createToken(user, "stamped");
    expect(await lastUsedOf(user, made.tokenId)).toBeNull();
    const api = apiClient(stack.baseUrl, made.token);

    const first = clock.now();
    expect((await api.get("/api/users")).status).toBe(200);
    const stamped = await lastUsedOf(user, made.tokenId);
    expect(Date.parse(String(stamped))).toBeGreaterThanOrEqual(first);

    // Within the minute: no new stamp, whatever the number of requests.
    clock.advance(LAST_USED_PRECISION_MS - 5_000);
    for (let i = 0; i < 3; i++) expect((await api.get("/api/users")).status).toBe(200);
    expect(await lastUsedOf(user, made.tokenId)).toBe(stamped);

    // Over a minute after the stamp: the next request stamps again.
    clock.advance(10_000);
    const later = clock.now();
    expect((await api.get("/api/users")).status).toBe(200);
    const restamped = await lastUsedOf(user, made.tokenId);
    expect(restamped).not.toBe(stamped);
    expect(Date.parse(String(restamped))).toBeGreaterThanOrEqual(later);
  });
});

describe("tokenLastUsed, when its stamp fails", () => {
  it("the request it records is answered all the same (the stamp is best effort)", async () => {
    const user = await newUser();
    const made = await createToken(user, "unstampable");
    const client = dynamo(getConfig().homeRegion);
    const name = `fail-stamp-${made.tokenId}`;
    let refused = 0;
    client.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { UpdateExpression?: string; Key?: unknown };
        if (
          input.UpdateExpression?.includes("tokenLastUsed") &&
          JSON.stringify(input.Key).includes(`TOKEN#${hashToken(made.token)}`)
        ) {
          refused++;
          throw Object.assign(new Error("Throughput exceeds the current capacity"), {
            name: "ProvisionedThroughputExceededException",
          });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const answer = await apiClient(stack.baseUrl, made.token).get("/api/users");
      expect(answer.status).toBe(200);
      expect(refused).toBe(1);
      expect(
        (await listUserTokens(user.userId)).find((token) => token.tokenId === made.tokenId)?.tokenLastUsed,
      ).toBeNull();
    } finally {
      client.middlewareStack.remove(name);
    }
  });
});

describe("secrets", () => {
  it("no raw token of this file is in a captured log line or in any stored item of any region (request logs included)", async () => {
    expect(rawTokens.size).toBeGreaterThan(30);
    const logs = logLines.join("");
    // The capture works: the audit lines of issued and revoked tokens are there, by id.
    expect(logs).toMatch(/"message":"API token issued".*"id":"tok_/);
    expect(logs).toMatch(/"message":"API token revoked".*"id":"tok_/);
    const config = getConfig();
    const stored: string[] = [];
    for (const region of config.regions) {
      const db = new DynamoDBClient({ region });
      let start: Record<string, unknown> | undefined;
      do {
        const page = await db.send(
          new ScanCommand({
            TableName: config.tableName,
            ExclusiveStartKey: start as never,
            ConsistentRead: true,
          }),
        );
        stored.push(JSON.stringify(page.Items ?? []));
        start = page.LastEvaluatedKey;
      } while (start);
    }
    const everything = stored.join("\n");
    // The search itself finds what it looks for: token hashes are stored (as item keys).
    expect(everything).toContain(hashToken([...rawTokens][0] ?? ""));
    for (const raw of rawTokens) {
      expect(logs.includes(raw), "a raw token in the logs").toBe(false);
      expect(everything.includes(raw), "a raw token in a stored item").toBe(false);
    }
  });
});
