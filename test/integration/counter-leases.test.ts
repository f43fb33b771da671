/**
 * The data plane's limited counters on quota leases against the emulator's table: several
 * data-plane objects in one process (`createDataPlane`, each its own warm instance with its own
 * leases, the real counting, freshness check and writes after the answer; the configuration and the
 * target injected) share one window:
 * - exactly the limit passes, and once every instance gave its units back the counter item's
 *   `leased` and (meters) `value` hold exactly what passed;
 * - an instance dropped mid-window without giving back (killed) never lets the others over the
 *   limit: the total is short by at most the block it held;
 * - a window counted before it had a limit (its `value`, no `leased`) is leased from its count.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { CounterLeases, createCounting } from "#lib/data-plane/counter-leases.ts";
import { type CounterStep, counterKeys } from "#lib/data-plane/counters.ts";
import { createDataPlane } from "#lib/data-plane/pipeline.ts";
import type { ProxyRuntime } from "#lib/data-plane/runtime-config.ts";
import type { SingleUseClaims } from "#lib/data-plane/stages/claim.ts";
import type { OutboundResponse } from "#lib/net/outbound.ts";
import { windowAt } from "#lib/shared/meter-windows.ts";
import { provisionTable } from "#local/provision.ts";
import { storedItem } from "../support/stack.ts";
import { CALLER_KEY, credential, meter, request, runtime } from "../unit/stages/fixtures.ts";

const REGION = "us-east-1";

beforeAll(async () => {
  await provisionTable(REGION, getConfig().tableName);
});

const OK: OutboundResponse = {
  status: 200,
  headers: { "content-type": "application/json" },
  body: Buffer.from('{"ok":true}'),
  truncated: false,
  timings: { startedAt: 0, headersAt: 0, endedAt: 0 },
  url: "https://target.example/v1/items/42",
};

const claims: SingleUseClaims = {
  claim: async () => true,
  release: async () => undefined,
  consume: async () => undefined,
};

/** A configuration with its own caller credential (so its own rate window). */
function configuration(options: Parameters<typeof runtime>[0] = {}): ProxyRuntime {
  const caller = credential(randomUUID(), "proxy", "apiKey", { keyName: "x-api-key", keyValue: CALLER_KEY });
  // version 0: the client has no runtime item in this table, which reads as version 0 (current).
  return { ...runtime({ ...options, proxyCredential: caller }), version: 0 };
}

/** One warm instance: its own counting (leases, versions read), the shared table. */
function instance(config: ProxyRuntime) {
  const counting = createCounting(REGION, { freshness: { mode: "strict", boundMs: 1000 } });
  const plane = createDataPlane(REGION, {
    loadRuntime: async () => ({ runtime: config, fresh: false }),
    counting,
    claims,
    send: async () => OK,
  });
  return { plane, counting };
}

/** Wait until at least `ms` are left in the current minute (a burst must stay in one window). */
async function roomInMinute(ms: number) {
  const left = windowAt("minute", Date.now()).end - Date.now();
  if (left < ms) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

const passed = (statuses: number[]) => statuses.filter((status) => status === 200).length;

describe("several instances share one window", () => {
  it("the plan's rate window: of 120 concurrent requests over 4 instances at a limit of 25, exactly 25 pass; leased = 25", async () => {
    await roomInMinute(15_000);
    const config = configuration({ rateLimitOverride: 25 });
    const instances = Array.from({ length: 4 }, () => instance(config));
    const statuses = await Promise.all(
      Array.from({ length: 120 }, async (_, i) => (await instances[i % 4]!.plane.handle(request())).status),
    );
    expect(passed(statuses)).toBe(25);
    expect(statuses.filter((status) => status === 429)).toHaveLength(95);
    await Promise.all(instances.map(({ counting }) => counting.leases.releaseAll()));
    const window = windowAt("minute", Date.now());
    const item = await storedItem(
      counterKeys.rate(config.proxyCredential!.item.credentialId, window),
      REGION,
    );
    expect(item).toMatchObject({ entity: "rateCounter", leased: 25 });
  });

  it("a meter's window: rounds of traffic over 3 instances admit exactly its limit; value and leased = 30", async () => {
    const meterId = randomUUID();
    const config = configuration({
      rateLimitOverride: 100_000,
      meters: [meter(meterId, { meterType: "request_count", meterActive: true, limits: { hour: 30 } })],
    });
    const instances = Array.from({ length: 3 }, () => instance(config));
    const statuses: number[] = [];
    // Rounds, so the instances lease, top up after their answers and lease again.
    for (let round = 0; round < 6; round++)
      statuses.push(
        ...(await Promise.all(
          Array.from(
            { length: 12 },
            async (_, i) => (await instances[i % 3]!.plane.handle(request())).status,
          ),
        )),
      );
    expect(passed(statuses)).toBe(30);
    await Promise.all(instances.map(({ counting }) => counting.leases.releaseAll()));
    const item = await storedItem(
      counterKeys.meter(meterId, undefined, windowAt("hour", Date.now())),
      REGION,
    );
    expect(item).toMatchObject({ entity: "meterCounter", meterId, value: 30, leased: 30 });
  });

  it("an instance killed mid-window (its block never given back) never lets the others over the limit", async () => {
    const meterId = randomUUID();
    const config = configuration({
      rateLimitOverride: 100_000,
      meters: [meter(meterId, { meterType: "request_count", meterActive: true, limits: { hour: 40 } })],
    });
    const [doomed, ...others] = Array.from({ length: 3 }, () => instance(config));
    // The doomed instance serves a steady stream: after its answers it tops its lease up.
    let admitted = 0;
    for (let i = 0; i < 5; i++) if ((await doomed!.plane.handle(request())).status === 200) admitted++;
    const key = counterKeys.meter(meterId, undefined, windowAt("hour", Date.now()));
    const lost = doomed!.counting.leases.heldAt(key);
    expect(lost).toBeGreaterThan(0);
    doomed!.counting.leases.abandon();
    for (let round = 0; round < 5; round++)
      for (const status of await Promise.all(
        Array.from({ length: 20 }, async (_, i) => (await others[i % 2]!.plane.handle(request())).status),
      ))
        if (status === 200) admitted++;
    // Short by exactly the block the killed instance held, never over.
    expect(admitted).toBe(40 - lost);
    await Promise.all(others.map(({ counting }) => counting.leases.releaseAll()));
    expect(await storedItem(key, REGION)).toMatchObject({ value: 40 - lost, leased: 40 });
  });
});

describe("a window counted before it had a limit", () => {
  it("is leased from its admitted count: a limit of 10 on a window at 8 lets exactly 2 more through", async () => {
    const meterId = randomUUID();
    const window = windowAt("hour", Date.now());
    const key = counterKeys.meter(meterId, undefined, window);
    // Counted without a limit (value only, as the write after the answer leaves it).
    await dynamo(REGION).send(
      new UpdateCommand({
        TableName: getConfig().tableName,
        Key: key,
        UpdateExpression: "ADD #v :n SET entity = :e",
        ExpressionAttributeNames: { "#v": "value" },
        ExpressionAttributeValues: { ":n": 8, ":e": "meterCounter" },
      }),
    );
    const step: CounterStep = {
      name: "meter:m:hour",
      key,
      window,
      owner: { entity: "meterCounter", clientId: "c", proxyId: "p", counterOf: meterId },
      mode: "add",
      amount: 1,
      limit: 10,
    };
    const leases = new CounterLeases(REGION);
    const outcomes = [];
    for (let i = 0; i < 4; i++) outcomes.push("taken" in (await leases.take([step])));
    expect(outcomes).toEqual([true, true, false, false]);
    expect(await storedItem(key, REGION)).toMatchObject({ value: 8, leased: 10 });
  });
});
