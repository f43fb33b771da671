/**
 * Stage count (lib/data-plane/stages/count.ts): which counters a request is taken from before the
 * target is called, the 429 a refusal answers (stages/refusal.ts), and what count() makes of the
 * injected counting's answers. The leases run against the emulator in
 * test/integration/counter-leases.test.ts.
 */
import { describe, expect, it } from "vitest";
import { authenticateCaller } from "#lib/data-plane/caller-auth.ts";
import { isAnswer } from "#lib/data-plane/context.ts";
import { type CounterStep, clientRequestToken, counterKeys } from "#lib/data-plane/counters.ts";
import { planMeters, predicateRequestOf, valueMeans } from "#lib/data-plane/meter-plan.ts";
import { admit } from "#lib/data-plane/stages/admit.ts";
import { CLIENT_STEP, type Counting, count, countSteps, RATE_STEP } from "#lib/data-plane/stages/count.ts";
import { refusal } from "#lib/data-plane/stages/refusal.ts";
import { callerHash, windowAt } from "#lib/shared/meter-windows.ts";
import {
  CALLER_KEY,
  CLIENT_ID,
  credential,
  located,
  meter,
  NOW,
  PROXY_ID,
  type RuntimeOptions,
  runtime,
} from "./fixtures.ts";

/** A context admitted on this configuration (the real admit stage, the real caller check). */
async function admitted(options: RuntimeOptions = {}, overrides: Parameters<typeof located>[1] = {}) {
  const ctx = located(runtime(options), overrides);
  const result = await admit(ctx, authenticateCaller);
  if (isAnswer(result)) throw new Error(`not admitted: ${result.outcome.message}`);
  return result;
}

const METERS = [
  meter("m-count", { meterType: "request_count", meterActive: true, limits: { minute: 5, day: 100 } }),
  meter("m-value", {
    meterType: "response_value",
    meterActive: true,
    limits: { hour: 1000 },
    extraction: { location: "body", path: "usage.tokens" },
  }),
  meter("m-free", { meterType: "request_count", meterActive: true }), // no limit: settled after
  meter("m-post", {
    meterType: "request_count",
    meterActive: true,
    meterMode: "conditional",
    effect: "include",
    methods: ["POST"],
    limits: { minute: 1 },
  }),
  meter("m-off", { meterType: "request_count", meterActive: false, limits: { minute: 1 } }),
  meter("m-caller", {
    meterType: "request_count",
    meterActive: true,
    limits: { month: 10 },
    variables: [{ name: "customer", source: "header", key: "x-customer-id" }],
    limitBy: "customer",
  }),
];

const summary = (step: CounterStep) => ({
  name: step.name,
  key: step.key,
  window: step.window.kind,
  mode: step.mode,
  amount: step.amount,
  limit: step.limit,
  owner: step.owner,
});

describe("countSteps", () => {
  it("is the rate window of the proxy credential alone when the proxy has no meters", async () => {
    const ctx = await admitted();
    expect(countSteps(ctx, [], NOW).map(summary)).toEqual([
      {
        name: RATE_STEP,
        key: counterKeys.rate("cred-caller", windowAt("minute", NOW)),
        window: "minute",
        mode: "add",
        amount: 1,
        limit: 1000,
        owner: { entity: "rateCounter", clientId: CLIENT_ID, proxyId: PROXY_ID, counterOf: "cred-caller" },
      },
    ]);
  });

  it("adds every limited window of every applying meter: request_count adds 1, response_value reserves", async () => {
    const ctx = await admitted(
      { meters: METERS },
      { headers: { "x-api-key": "caller-secret-key-0123456789", "x-customer-id": "acme" } },
    );
    const uses = planMeters(ctx, NOW);
    expect(uses.map((use) => use.meterId)).toEqual(["m-count", "m-value", "m-free", "m-caller"]);
    const steps = countSteps(ctx, uses, NOW).map(summary);
    const meterOwner = (counterOf: string) => ({
      entity: "meterCounter",
      clientId: CLIENT_ID,
      proxyId: PROXY_ID,
      counterOf,
    });
    expect(steps.slice(1)).toEqual([
      {
        name: "meter:m-count:minute",
        key: counterKeys.meter("m-count", undefined, windowAt("minute", NOW)),
        window: "minute",
        mode: "add",
        amount: 1,
        limit: 5,
        owner: meterOwner("m-count"),
      },
      {
        name: "meter:m-count:day",
        key: counterKeys.meter("m-count", undefined, windowAt("day", NOW)),
        window: "day",
        mode: "add",
        amount: 1,
        limit: 100,
        owner: meterOwner("m-count"),
      },
      {
        name: "meter:m-value:hour",
        key: counterKeys.meter("m-value", undefined, windowAt("hour", NOW)),
        window: "hour",
        // No value known yet on this instance: the whole limit (one request at a time).
        mode: "reserve",
        amount: 1000,
        limit: 1000,
        owner: meterOwner("m-value"),
      },
      {
        name: "meter:m-caller:month",
        key: counterKeys.meter("m-caller", callerHash("acme"), windowAt("month", NOW)),
        window: "month",
        mode: "add",
        amount: 1,
        limit: 10,
        owner: meterOwner("m-caller"),
      },
    ]);
    // The reservation is recorded for the settlement; once values are known, it is their mean.
    expect(uses[1]?.windows).toEqual([{ window: windowAt("hour", NOW), limit: 1000, reserved: 1000 }]);
    valueMeans.set("m-value", { sum: 90, n: 3 });
    try {
      const again = countSteps(ctx, planMeters(ctx, NOW), NOW).find(
        (step) => step.name === "meter:m-value:hour",
      );
      expect(again).toMatchObject({ mode: "reserve", amount: 30, limit: 1000 });
    } finally {
      valueMeans.delete("m-value");
    }
    expect(steps[1]?.key.pKey).toBe("METERUSE#m-count");
    expect(steps[4]?.key.pKey).toBe(`METERUSE#m-caller#${callerHash("acme")}`);
  });

  it("a conditional meter counts only the requests it applies to", async () => {
    const ctx = await admitted({ meters: METERS }, { method: "POST" });
    const names = countSteps(ctx, planMeters(ctx, NOW), NOW).map((step) => step.name);
    expect(names).toContain("meter:m-post:minute");
    expect(names).not.toContain("meter:m-off:minute");
  });
});

describe("a managed client's limits", () => {
  it("add one counter per limited window of the client, after the rate window and before the meters", async () => {
    const ctx = await admitted({ requestsPerMinute: 5, requestsPerDay: 100, meters: METERS });
    const steps = countSteps(ctx, planMeters(ctx, NOW), NOW);
    expect(steps.map((step) => step.name).slice(0, 4)).toEqual([
      RATE_STEP,
      `${CLIENT_STEP}minute`,
      `${CLIENT_STEP}day`,
      "meter:m-count:minute",
    ]);
    expect(steps.slice(1, 3).map(summary)).toEqual(
      (["minute", "day"] as const).map((kind) => ({
        name: `client:${kind}`,
        key: counterKeys.client(CLIENT_ID, windowAt(kind, NOW)),
        window: kind,
        mode: "add",
        amount: 1,
        limit: kind === "minute" ? 5 : 100,
        owner: { entity: "clientCounter", clientId: CLIENT_ID, proxyId: PROXY_ID, counterOf: CLIENT_ID },
      })),
    );
    expect(counterKeys.client(CLIENT_ID, windowAt("day", NOW))).toEqual({
      pKey: `RATE#CLIENT#${CLIENT_ID}#day`,
      sKey: String(Date.UTC(2025, 0, 15)),
    });
  });

  it("a window without a limit has no counter; a client without limits has none", async () => {
    const onlyDay = await admitted({ requestsPerDay: 100 });
    expect(countSteps(onlyDay, [], NOW).map((step) => step.name)).toEqual([RATE_STEP, "client:day"]);
    expect(countSteps(await admitted(), [], NOW).map((step) => step.name)).toEqual([RATE_STEP]);
  });

  it("refused: 429 client-limit-exceeded with the meters' headers, whatever else refused", async () => {
    const ctx = await admitted({ requestsPerMinute: 5, requestsPerDay: 100, meters: METERS });
    const uses = planMeters(ctx, NOW);
    ctx.metering = { applied: uses.map((use) => use.meterId), refused: [] };
    const steps = countSteps(ctx, uses, NOW);
    const answer = refusal(
      ctx,
      steps,
      [RATE_STEP, "client:minute", "client:day", "meter:m-count:minute"],
      NOW,
      uses,
    );
    expect(answer.response.status).toBe(429);
    expect(answer.outcome).toEqual({
      code: "client-limit-exceeded",
      message: "Too many requests: the client's limit of 5 requests per minute is reached",
    });
    expect(answer.response.headers).toMatchObject({
      "retry-after": "48580", // the day window ends at midnight UTC
      ratelimit:
        '"rate";r=0;t=40, "client-minute";r=0;t=40, "client-day";r=0;t=48580, "m-count-minute";r=0;t=40',
      "ratelimit-policy":
        '"rate";q=1000;w=60, "client-minute";q=5;w=60, "client-day";q=100;w=86400, "m-count-minute";q=5;w=60',
    });
    expect(answer.response.headers["x-ratelimit-limit"]).toBeUndefined();
    expect(ctx.metering.refused).toEqual([{ meterId: "m-count", window: "minute" }]);
    expect(JSON.parse(answer.response.body.toString())).toEqual({
      code: "client-limit-exceeded",
      message: answer.outcome.message,
    });
    const dayOnly = refusal(ctx, steps, ["client:day"], NOW, uses);
    expect(dayOnly.outcome.message).toBe(
      "Too many requests: the client's limit of 100 requests per day is reached",
    );
    expect(dayOnly.response.headers).toMatchObject({
      "retry-after": "48580",
      ratelimit: '"client-day";r=0;t=48580',
    });
  });
});

describe("refusal", () => {
  it("for the rate limit alone: 429 proxy-access-granted, Retry-After, RateLimit headers, x-ratelimit-*", async () => {
    const ctx = await admitted();
    const steps = countSteps(ctx, [], NOW);
    const answer = refusal(ctx, steps, [RATE_STEP], NOW);
    expect(answer.response.status).toBe(429);
    expect(answer.outcome).toEqual({
      code: "proxy-access-granted",
      message: "Too many requests: the proxy credential's rate limit is exceeded",
    });
    expect(answer.response.headers).toMatchObject({
      "retry-after": "40", // NOW is 10:30:20 UTC; the minute ends at 10:31:00
      ratelimit: '"rate";r=0;t=40',
      "ratelimit-policy": '"rate";q=1000;w=60',
      "x-ratelimit-limit": "1000",
      "x-ratelimit-remaining": "0",
    });
    expect(ctx.metering).toBeUndefined(); // the proxy has no meters
  });

  it("for meters: 429 meter-limit-exceeded, Retry-After the longest wait, one RateLimit item per window", async () => {
    const ctx = await admitted(
      { meters: METERS },
      { headers: { "x-api-key": "caller-secret-key-0123456789", "x-customer-id": "acme" } },
    );
    const uses = planMeters(ctx, NOW);
    ctx.metering = { applied: uses.map((use) => use.meterId), refused: [] };
    const steps = countSteps(ctx, uses, NOW);
    const answer = refusal(
      ctx,
      steps,
      ["meter:m-count:minute", "meter:m-count:day", "meter:m-value:hour", "meter:m-caller:month"],
      NOW,
      uses,
    );
    expect(answer.response.status).toBe(429);
    expect(answer.outcome).toEqual({
      code: "meter-limit-exceeded",
      message: "Too many requests: the minute limit of meter m-count is reached",
    });
    const pk = `:${Buffer.from(callerHash("acme"), "hex").toString("base64")}:`;
    const monthEnd = Date.UTC(2025, 1, 1);
    expect(answer.response.headers).toMatchObject({
      "retry-after": String((monthEnd - NOW) / 1000),
      ratelimit: [
        '"m-count-minute";r=0;t=40',
        '"m-count-day";r=0;t=48580',
        '"m-value-hour";r=0;t=1780',
        `"m-caller-month";r=0;t=${(monthEnd - NOW) / 1000};pk=${pk}`,
      ].join(", "),
      "ratelimit-policy": [
        '"m-count-minute";q=5;w=60',
        '"m-count-day";q=100;w=86400',
        '"m-value-hour";q=1000;pg-unit="value";w=3600',
        `"m-caller-month";q=10;w=${31 * 86400};pk=${pk}`,
      ].join(", "),
    });
    expect(answer.response.headers["x-ratelimit-limit"]).toBeUndefined();
    expect(ctx.metering.refused).toEqual([
      { meterId: "m-count", window: "minute" },
      { meterId: "m-count", window: "day" },
      { meterId: "m-value", window: "hour" },
      { meterId: "m-caller", window: "month" },
    ]);
    expect(JSON.parse(answer.response.body.toString())).toEqual({
      code: "meter-limit-exceeded",
      message: answer.outcome.message,
    });
  });

  it("a meter refusing with the rate limit is answered as the meter's", async () => {
    const ctx = await admitted({ meters: METERS });
    const uses = planMeters(ctx, NOW);
    const answer = refusal(ctx, countSteps(ctx, uses, NOW), [RATE_STEP, "meter:m-count:minute"], NOW, uses);
    expect(answer.outcome.code).toBe("meter-limit-exceeded");
    expect(answer.response.headers["ratelimit-policy"]).toBe('"rate";q=1000;w=60, "m-count-minute";q=5;w=60');
  });
});

describe("count", () => {
  /** Counting that records its calls and answers `current` and `outcome`. */
  function recorder(outcome: { refused: string[] } | "taken" | Error, current: boolean | Error = true) {
    const calls = { checks: [] as unknown[][], takes: [] as CounterStep[][], restored: 0 };
    const counting: Counting = {
      isCurrent: async (...args) => {
        calls.checks.push(args);
        if (current instanceof Error) throw current;
        return current;
      },
      take: async (steps) => {
        calls.takes.push([...steps]);
        if (outcome instanceof Error) throw outcome;
        if (outcome !== "taken") return outcome;
        const restore = () => {
          calls.restored++;
        };
        return { taken: { restore, settle: () => 0, topUp: async () => undefined } };
      },
    };
    return { calls, deps: { counting, now: () => NOW } };
  }

  it("counted: the steps taken from the leases, the version checked in parallel, the leases kept for after the answer", async () => {
    const ctx = await admitted({ meters: METERS, version: 7 });
    ctx.fresh = false; // a cached configuration
    const { calls, deps } = recorder("taken");
    expect(await count(ctx, deps, { checkVersion: true })).toBeUndefined();
    expect(calls.takes).toEqual([countSteps(ctx, planMeters(ctx, NOW), NOW)]);
    expect(calls.checks).toEqual([[CLIENT_ID, 7, false]]);
    expect(ctx.counted).toBe(true);
    expect(ctx.leases).toBeDefined();
    expect(ctx.meterUses?.map((use) => use.meterId)).toEqual(["m-count", "m-value", "m-free", "m-caller"]);
    expect(ctx.metering).toEqual({ applied: ["m-count", "m-value", "m-free", "m-caller"], refused: [] });
  });

  it("without the version check when the pipeline gives up checking it; no metering without meters", async () => {
    const ctx = await admitted();
    const { calls, deps } = recorder("taken");
    await count(ctx, deps, { checkVersion: false });
    expect(calls.checks).toEqual([]);
    expect(calls.takes).toHaveLength(1);
    expect(ctx.metering).toBeUndefined();
    expect(ctx.counted).toBe(true);
  });

  it("refused: the 429 of the refused steps, and the request is not counted", async () => {
    const ctx = await admitted({ meters: METERS });
    const { deps } = recorder({ refused: ["meter:m-count:day"] });
    const answer = (await count(ctx, deps, { checkVersion: true })) as Exclude<
      Awaited<ReturnType<typeof count>>,
      "stale" | undefined
    >;
    expect(answer.response.status).toBe(429);
    expect(answer.outcome.message).toBe("Too many requests: the day limit of meter m-count is reached");
    expect(answer.response.headers["retry-after"]).toBe("48580");
    expect(ctx.counted).toBe(false);
    expect(ctx.metering?.refused).toEqual([{ meterId: "m-count", window: "day" }]);
  });

  it("stale: answers 'stale', gives the units taken back and counts nothing", async () => {
    const ctx = await admitted({ meters: METERS });
    const { calls, deps } = recorder("taken", false);
    expect(await count(ctx, deps, { checkVersion: true })).toBe("stale");
    expect(calls.restored).toBe(1);
    expect(ctx.counted).toBe(false);
    expect(ctx.leases).toBeUndefined();
  });

  it("stale wins over a refusal (decided again on the current configuration)", async () => {
    const ctx = await admitted({ meters: METERS });
    const { deps } = recorder({ refused: ["rate"] }, false);
    expect(await count(ctx, deps, { checkVersion: true })).toBe("stale");
  });

  it("a failed version read throws with the units taken given back", async () => {
    const ctx = await admitted({ meters: METERS });
    const { calls, deps } = recorder("taken", new Error("store down"));
    await expect(count(ctx, deps, { checkVersion: true })).rejects.toThrow("store down");
    expect(calls.restored).toBe(1);
    expect(ctx.counted).toBe(false);
  });

  it("tokens differ per request and per attempt, and fit DynamoDB's 36 characters", () => {
    const a = clientRequestToken("req-a", "count:1");
    expect(a).toHaveLength(36);
    expect(clientRequestToken("req-a", "count:1")).toBe(a);
    expect(clientRequestToken("req-a", "count:2")).not.toBe(a);
    expect(clientRequestToken("req-b", "count:1")).not.toBe(a);
  });
});

describe("predicateRequestOf: the request as meters' and transforms' predicates and variables see it", () => {
  it("leaves out the caller's credential (header, query parameter, authorization) and keeps the rest", async () => {
    const headerCaller = await admitted(
      {},
      {
        rawQuery: "x=1&x=2",
        headers: Object.assign(Object.create(null), {
          "x-api-key": CALLER_KEY,
          authorization: "Bearer anything",
          "x-role": "user,admin",
        }),
      },
    );
    const view = predicateRequestOf(headerCaller);
    expect(view.headerValues("x-api-key")).toBeUndefined();
    expect(view.headerValues("authorization")).toBeUndefined();
    expect(view.headerValues("x-role")).toEqual(["user,admin"]);
    expect(view.queryValues("x")).toEqual(["1", "2"]);

    const queryKey = credential("cred-q", "proxy", "apiKey", {
      keyName: "api_key",
      keyValue: CALLER_KEY,
      placement: "query",
    });
    const queryCaller = await admitted(
      { proxyCredential: queryKey },
      { rawQuery: `api_key=${CALLER_KEY}&api_key=again&x=1`, headers: Object.create(null) },
    );
    const queryView = predicateRequestOf(queryCaller);
    expect(queryView.queryValues("api_key")).toBeUndefined();
    expect(queryView.queryValues("x")).toEqual(["1"]);
  });

  it("a meter on the credential header never applies; the path is the normalised one", async () => {
    const ctx = await admitted(
      {
        meters: [
          meter("m-key", {
            meterType: "request_count",
            meterActive: true,
            meterMode: "conditional",
            effect: "include",
            headers: [{ name: "x-api-key", presence: "present" }],
            limits: { minute: 1 },
          }),
        ],
      },
      { path: `/api/${PROXY_ID}/%61dmin` },
    );
    expect(planMeters(ctx, NOW)).toEqual([]);
    expect(predicateRequestOf(ctx).path).toBe("/admin");
  });
});
