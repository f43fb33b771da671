/**
 * A client's feature and promo overrides (issue 24, docs/billing.md "Overrides") over real HTTP
 * against the local stack: only a system administrator sets them, only known values, a bounded
 * list; members see them on the client's billing; and `core_api_rate_limit_x10` raises the Core
 * API's per-token limit at once, and removing it restores the plan's.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { MAX_OVERRIDES } from "#lib/domain/feature-overrides.ts";
import { createMsp } from "#lib/domain/msps.ts";
import { setSystemAdmin } from "#lib/domain/users.ts";
import { MINUTE_MS, TestClock } from "../support/clock.ts";
import {
  type ApiResult,
  createClientFor,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const VALIDATION = "Input failed data validation";

let stack: TestStack;
let sysadmin: TestUser;
/** The Core API counts per fixed one-minute window: the burst starts 1 s into a fresh minute. */
const clock = new TestClock();

beforeAll(async () => {
  stack = await startTestStack({ clock: clock.now });
  sysadmin = await stack.newUser();
  await setSystemAdmin(sysadmin.userId, true);
});
afterAll(async () => {
  await stack?.stop();
});

const overridesPath = (clientId: string) => `/api/clients/${clientId}/feature-overrides`;
const windowOf = (ms: number) => Math.floor(ms / MINUTE_MS);
const limitOf = (response: ApiResult) => response.headers.get("x-ratelimit-limit");

describe("setting and showing the overrides", () => {
  it("only a system administrator reads and sets them; members see them on the billing", async () => {
    const owner = await stack.newUser();
    const clientId = await createClientFor(owner, "Overridden Co");

    // The owner may not (403), a system administrator may; an unknown client is a 404.
    expect((await owner.api.get(overridesPath(clientId))).status).toBe(403);
    expect((await owner.api.put(overridesPath(clientId), { featureOverrides: [] })).status).toBe(403);
    expect((await sysadmin.api.put(overridesPath("no-such-client"), { promoOverrides: [] })).status).toBe(
      404,
    );

    const initial = await sysadmin.api.get(overridesPath(clientId));
    expect(initial.status).toBe(200);
    expect(initial.body.featureOverrides).toEqual([
      { clientId, featureOverrides: [], promoOverrides: [], configUpdated: expect.any(String) },
    ]);

    const promo = await sysadmin.api.put(overridesPath(clientId), { promoOverrides: ["extended_trial"] });
    expect(promo.status, JSON.stringify(promo.body)).toBe(200);
    expect(promo.body.featureOverrides[0]).toMatchObject({
      featureOverrides: [],
      promoOverrides: ["extended_trial"],
    });
    // A list not given stays.
    const feature = await sysadmin.api.put(overridesPath(clientId), {
      featureOverrides: ["core_api_rate_limit_x10"],
    });
    expect(feature.body.featureOverrides[0]).toMatchObject({
      featureOverrides: ["core_api_rate_limit_x10"],
      promoOverrides: ["extended_trial"],
    });
    expect(await storedItem(keys.clientConfig(clientId))).toMatchObject({
      featureOverrides: ["core_api_rate_limit_x10"],
      promoOverrides: ["extended_trial"],
    });

    // Every member sees them with the plan.
    const billing = await owner.api.get(`/api/clients/${clientId}/billing`);
    expect(billing.status).toBe(200);
    expect(billing.body.billing).toMatchObject({
      planTier: "basic",
      featureOverrides: ["core_api_rate_limit_x10"],
      promoOverrides: ["extended_trial"],
    });

    // [] clears a list.
    const cleared = await sysadmin.api.put(overridesPath(clientId), { promoOverrides: [] });
    expect(cleared.body.featureOverrides[0]).toMatchObject({
      featureOverrides: ["core_api_rate_limit_x10"],
      promoOverrides: [],
    });
  });

  it("an MSP sees them in its managed client's configuration", async () => {
    const mspOwner = await stack.newUser();
    const { msp } = await createMsp({ name: "Overrides MSP", ownerUserId: mspOwner.userId });
    const made = await mspOwner.api.post(`/api/msps/${msp.mspId}/clients`, { clientName: "Managed Co" });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const clientId = made.body.client.clientId as string;
    const configurationPath = `/api/msps/${msp.mspId}/clients/${clientId}/configurations`;
    expect((await mspOwner.api.get(configurationPath)).body.configuration).toMatchObject({
      featureOverrides: [],
      promoOverrides: [],
    });
    // The MSP's own staff may not set them: only a system administrator.
    expect(
      (await mspOwner.api.put(overridesPath(clientId), { promoOverrides: ["extended_trial"] })).status,
    ).toBe(403);
    await sysadmin.api.put(overridesPath(clientId), {
      featureOverrides: ["core_api_rate_limit_x10"],
      promoOverrides: ["extended_trial"],
    });
    expect((await mspOwner.api.get(configurationPath)).body.configuration).toMatchObject({
      featureOverrides: ["core_api_rate_limit_x10"],
      promoOverrides: ["extended_trial"],
    });
  });

  it("an unknown, repeated or excess value, or another field, is a 400 naming the field, and nothing changes", async () => {
    const owner = await stack.newUser();
    const clientId = await createClientFor(owner, "Strict Co");
    await sysadmin.api.put(overridesPath(clientId), { promoOverrides: ["extended_trial"] });
    const before = await storedItem(keys.clientConfig(clientId));

    const cases: [unknown, string][] = [
      [{ featureOverrides: ["unlimited_everything"] }, "featureOverrides.0"],
      [{ promoOverrides: ["core_api_rate_limit_x10"] }, "promoOverrides.0"],
      [{ featureOverrides: ["core_api_rate_limit_x10", "core_api_rate_limit_x10"] }, "featureOverrides"],
      [
        { featureOverrides: Array.from({ length: MAX_OVERRIDES + 1 }, () => "core_api_rate_limit_x10") },
        "featureOverrides",
      ],
      [{ promoOverrides: "extended_trial" }, "promoOverrides"],
      [{ limitOverrides: { requestsPerMinute: 5 } }, "limitOverrides"],
    ];
    for (const [body, field] of cases) {
      const answer = await sysadmin.api.put(overridesPath(clientId), body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.message).toBe(VALIDATION);
      expect(answer.body.fields, JSON.stringify(answer.body)).toContain(field);
    }
    const unknown = await sysadmin.api.put(overridesPath(clientId), {
      featureOverrides: ["unlimited_everything"],
    });
    expect(unknown.body.errors.join(" ")).toMatch(/unknown feature override; known: core_api_rate_limit_x10/);
    const excess = await sysadmin.api.put(overridesPath(clientId), {
      promoOverrides: Array.from({ length: MAX_OVERRIDES + 1 }, () => "extended_trial"),
    });
    expect(excess.body.errors.join(" ")).toMatch(new RegExp(`at most ${MAX_OVERRIDES}`));

    expect(await storedItem(keys.clientConfig(clientId))).toEqual(before);
  });
});

describe("core_api_rate_limit_x10: the Core API per-token limit", () => {
  it("the plan's limit refuses; with the override the higher limit applies at once; removing it restores the plan's", async () => {
    const owner = await stack.newUser();
    const clientId = await createClientFor(owner, "Busy Co");
    clock.toNextWindow();
    const window = windowOf(clock.now());

    // basic: 100 requests a minute per token; the 101st is refused.
    const burst = await Promise.all(Array.from({ length: 100 }, () => owner.api.get("/api/users")));
    expect(burst.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
    const refused = await owner.api.get("/api/users");
    expect(refused.status).toBe(429);
    expect(limitOf(refused)).toBe("100");

    // A system administrator (another token, its own window) grants the feature: the owner's very
    // next request, in the same window, is counted against ten times the plan's figure.
    const granted = await sysadmin.api.put(overridesPath(clientId), {
      featureOverrides: ["core_api_rate_limit_x10"],
    });
    expect(granted.status).toBe(200);
    const raised = await owner.api.get("/api/users");
    expect(raised.status).toBe(200);
    expect(limitOf(raised)).toBe("1000");
    expect(Number(raised.headers.get("x-ratelimit-remaining"))).toBeLessThan(1000 - 100);
    // The plan itself is unchanged: the billing still shows basic's figure.
    const billing = await owner.api.get(`/api/clients/${clientId}/billing`);
    expect(billing.body.billing).toMatchObject({ planTier: "basic", requestsPerMinute: 100 });

    // Removing it restores the plan's limit at once: the window's count is past it again.
    const removed = await sysadmin.api.put(overridesPath(clientId), { featureOverrides: [] });
    expect(removed.status).toBe(200);
    const restored = await owner.api.get("/api/users");
    expect(restored.status).toBe(429);
    expect(limitOf(restored)).toBe("100");

    expect(windowOf(clock.now()), "the test must finish inside one window").toBe(window);
  });
});
