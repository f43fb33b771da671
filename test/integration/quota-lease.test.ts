/**
 * Quota leasing (lib/data-plane/quota-lease.ts): the block size, and the leases against the real
 * table in the emulator: many instances at once admit exactly the limit, and units given back (at
 * window end or when idle) are neither lost nor spent twice.
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { GetCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import {
  type BlockSizeInput,
  dynamoLeaseStore,
  nextBlockSize,
  QuotaLease,
  type QuotaWindow,
} from "#lib/data-plane/quota-lease.ts";
import { keys } from "#lib/db/keys.ts";
import { rateWindowAt } from "#lib/domain/rate-limit.ts";
import { provisionTable } from "#local/provision.ts";

const REGION = "us-east-1";
const T0 = Date.UTC(2025, 0, 15, 12, 34, 0); // a whole minute
const minuteOf = (ms: number) => rateWindowAt(ms, 60_000);

beforeAll(async () => {
  await provisionTable(REGION, getConfig().tableName);
});

/** A fresh counter (one meter) and a store over it (`storeOf`: another instance's store). */
function counter(limit: number, options: { trackHolders?: boolean } = {}) {
  const meterId = randomUUID();
  const key = (window: QuotaWindow) => keys.meterWindow(meterId, "minute", window.start);
  const storeOf = () =>
    dynamoLeaseStore({
      region: REGION,
      key,
      limit,
      ...options,
      attributes: (window) => ({
        entity: "meterCounter",
        meterId,
        window: "minute",
        windowStart: window.start,
        windowEnd: window.end,
      }),
    });
  const store = storeOf();
  const item = async (window: QuotaWindow) =>
    (
      await dynamo(REGION).send(
        new GetCommand({ TableName: getConfig().tableName, Key: key(window), ConsistentRead: true }),
      )
    ).Item;
  return { store, storeOf, item, value: async (window: QuotaWindow) => (await item(window))?.value };
}

describe("nextBlockSize", () => {
  const base: BlockSizeInput = {
    ratePerSecond: 0,
    waiting: 1,
    blockSeconds: 1,
    minBlock: 1,
    maxBlock: 1000,
    lastRemaining: undefined,
    maxShareOfRemaining: 1 / 8,
  };

  it("covers blockSeconds of the instance's rate, within minBlock..maxBlock", () => {
    expect(nextBlockSize(base)).toBe(1);
    expect(nextBlockSize({ ...base, ratePerSecond: 120.2 })).toBe(121);
    expect(nextBlockSize({ ...base, ratePerSecond: 120, blockSeconds: 0.5 })).toBe(60);
    expect(nextBlockSize({ ...base, ratePerSecond: 50_000 })).toBe(1000);
    expect(nextBlockSize({ ...base, minBlock: 10 })).toBe(10);
  });

  it("covers the requests waiting for it", () => {
    expect(nextBlockSize({ ...base, waiting: 7 })).toBe(7);
  });

  it("takes at most a share of what the window had left, down to 1 unit", () => {
    expect(nextBlockSize({ ...base, ratePerSecond: 500, lastRemaining: 800 })).toBe(100);
    expect(nextBlockSize({ ...base, ratePerSecond: 500, lastRemaining: 20 })).toBe(2);
    expect(nextBlockSize({ ...base, ratePerSecond: 500, lastRemaining: 3 })).toBe(1);
    expect(nextBlockSize({ ...base, ratePerSecond: 500, lastRemaining: 0 })).toBe(1);
  });

  it("shares half of what is left among the instances leasing from the window", () => {
    // One or two holders: the share of 1/8 is the smaller bound.
    expect(nextBlockSize({ ...base, ratePerSecond: 500, lastRemaining: 800, holders: 2 })).toBe(100);
    // 20 holders: at most 800 / 40 each, so the 20 blocks together leave half the window.
    expect(nextBlockSize({ ...base, ratePerSecond: 500, lastRemaining: 800, holders: 20 })).toBe(20);
    expect(nextBlockSize({ ...base, ratePerSecond: 500, lastRemaining: 10, holders: 20 })).toBe(1);
  });
});

describe("dynamoLeaseStore", () => {
  it("grants whole blocks, then exactly what remains, then nothing; a give-back is leasable again", async () => {
    const { store, item, value } = counter(10);
    const window = minuteOf(T0);
    expect(await store.lease(window, 4)).toEqual({ granted: 4, remaining: 6 });
    expect(await store.lease(window, 4)).toEqual({ granted: 4, remaining: 2 });
    expect(await store.lease(window, 4)).toEqual({ granted: 2, remaining: 0 });
    expect(await store.lease(window, 1)).toEqual({ granted: 0, remaining: 0 });
    expect(await value(window)).toBe(10);
    await store.giveBack(window, 3);
    expect(await value(window)).toBe(7);
    expect(await store.lease(window, 5)).toEqual({ granted: 3, remaining: 0 });
    expect(await item(window)).toMatchObject({
      entity: "meterCounter",
      window: "minute",
      windowStart: window.start,
      windowEnd: window.end,
      value: 10,
      TTL: window.end / 1000 + 3600,
    });
  });

  it("never grants more than the limit, whatever is asked", async () => {
    const { store, value } = counter(5);
    const window = minuteOf(T0);
    expect(await store.lease(window, 50)).toEqual({ granted: 5, remaining: 0 });
    expect(await value(window)).toBe(5);
  });
});

describe("dynamoLeaseStore with trackHolders", () => {
  it("names each store in the item's holders once, and answers how many there are", async () => {
    const { storeOf, item } = counter(100, { trackHolders: true });
    const window = minuteOf(T0);
    const [a, b, c] = [storeOf(), storeOf(), storeOf()];
    expect(await a.lease(window, 1)).toEqual({ granted: 1, remaining: 99, holders: 1 });
    expect(await a.lease(window, 1)).toEqual({ granted: 1, remaining: 98, holders: 1 });
    expect(await b.lease(window, 1)).toEqual({ granted: 1, remaining: 97, holders: 2 });
    expect(await c.lease(window, 2)).toEqual({ granted: 2, remaining: 95, holders: 3 });
    const holders = (await item(window))?.holders;
    expect(holders).toBeInstanceOf(Set);
    expect((holders as Set<string>).size).toBe(3);
  });
});

describe("QuotaLease", () => {
  it("20 instances, a burst below the limit (500 of 1,000 arriving at about 2,000 a second): every request passes", async () => {
    const limit = 1000;
    const { storeOf, value } = counter(limit, { trackHolders: true });
    const window = minuteOf(Date.now());
    const instances = Array.from(
      { length: 20 },
      () => new QuotaLease({ store: storeOf(), windowAt: () => window }),
    );
    // Dealt round-robin, two a millisecond (bench/scale-sim.ts (c)): each instance sees about 100
    // a second and sizes its blocks by it; an eighth of what is left each, 20 instances would
    // lease the window dry while each spends 25, and refuse the last requests.
    const answers: Promise<boolean>[] = [];
    for (let index = 0; index < 500; index += 2) {
      for (const n of [index, index + 1]) answers.push((instances[n % 20] as QuotaLease).take());
      await sleep(1);
    }
    const admitted = (await Promise.all(answers)).filter(Boolean).length;
    expect(admitted).toBe(500);
    await Promise.all(instances.map((lease) => lease.release()));
    expect(await value(window)).toBe(500);
  });

  it("N instances in parallel, demand above the limit: exactly the limit passes, with far fewer store calls", async () => {
    const limit = 150;
    const { store, value } = counter(limit);
    const window = minuteOf(Date.now());
    const instances = Array.from({ length: 10 }, () => new QuotaLease({ store, windowAt: () => window }));
    const perInstance = 60; // 600 requests in all: four times the limit
    const admittedBy = await Promise.all(
      instances.map(async (lease) => {
        let left = perInstance;
        let admitted = 0;
        await Promise.all(
          Array.from({ length: 3 }, async () => {
            while (left > 0) {
              left--;
              if (await lease.take()) admitted++;
              // Every request, admitted or refused, takes a moment: the instances advance together.
              await sleep(1);
            }
          }),
        );
        return admitted;
      }),
    );
    const admitted = admittedBy.reduce((a, b) => a + b, 0);
    expect(admitted).toBe(limit);
    await Promise.all(instances.map((lease) => lease.release()));
    expect(await value(window)).toBe(limit);
    const stats = instances.map((lease) => lease.stats);
    expect(stats.reduce((sum, s) => sum + s.refused, 0)).toBe(10 * perInstance - limit);
    expect(stats.reduce((sum, s) => sum + s.leasedUnits - s.returnedUnits, 0)).toBe(limit);
    // The refusals after the window ran dry cost no store call each: well under one call per
    // request even when a loaded machine slows the instances (then blocks are smaller).
    expect(stats.reduce((sum, s) => sum + s.leases, 0)).toBeLessThan((10 * perInstance) / 2);
  });

  it("gives the unspent units back when the window ends: none lost, and the new window starts afresh", async () => {
    const limit = 100;
    const { store, value } = counter(limit);
    let clock = T0 + 1_000;
    const lease = new QuotaLease({ store, windowAt: minuteOf, now: () => clock, minBlock: 10 });
    for (let i = 0; i < 3; i++) expect(await lease.take()).toBe(true);
    expect(lease.held).toBe(7);
    expect(await value(minuteOf(T0))).toBe(10);
    clock = T0 + 61_000; // the next window
    expect(await lease.take()).toBe(true);
    await lease.flush();
    expect(await value(minuteOf(T0))).toBe(3); // exactly what was admitted in it
    expect(await value(minuteOf(clock))).toBe(10);
    expect(lease.stats).toMatchObject({ admitted: 4, returns: 1, returnedUnits: 7, unreturnedUnits: 0 });
  });

  it("units an idle instance gives back are admitted elsewhere: with returns, exactly the limit passes", async () => {
    const limit = 40;
    const { store, value } = counter(limit);
    const window = minuteOf(T0);
    const options = { store, windowAt: () => window, now: () => T0 + 1_000, maxShareOfRemaining: 1 };
    // Instance A leases a large block and serves little of it, while B is refused.
    const a = new QuotaLease({ ...options, minBlock: 30 });
    const b = new QuotaLease({ ...options, minBlock: 30, recheckMs: 0 });
    for (let i = 0; i < 5; i++) expect(await a.take()).toBe(true);
    let admittedByB = 0;
    for (let i = 0; i < 50; i++) if (await b.take()) admittedByB++;
    expect(admittedByB).toBe(10); // all that was left
    expect(await b.take()).toBe(false);
    // A goes idle: its 25 unspent units go back, and B's next requests get them.
    await a.release();
    for (let i = 0; i < 50; i++) if (await b.take()) admittedByB++;
    expect(5 + admittedByB).toBe(limit);
    await b.release();
    expect(await value(window)).toBe(limit);
  });

  it("a request needs a unit of every counter: when one refuses, the others get theirs back locally", async () => {
    const perMinute = counter(100);
    const perDay = counter(2);
    const options = { windowAt: () => minuteOf(T0), now: () => T0 + 1_000, minBlock: 5 };
    const minute = new QuotaLease({ ...options, store: perMinute.store });
    const day = new QuotaLease({ ...options, store: perDay.store });
    const admit = async () => {
      if (!(await minute.take())) return false;
      if (await day.take()) return true;
      minute.restore();
      return false;
    };
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await admit());
    expect(results).toEqual([true, true, false, false]);
    expect(minute.stats.admitted).toBe(2);
    expect(minute.held).toBe(3);
    await minute.release();
    expect(await perMinute.value(minuteOf(T0))).toBe(2);
  });

  it("refuses locally for recheckMs once the window ran dry, then asks again", async () => {
    const { store } = counter(2);
    let clock = T0 + 1_000;
    const lease = new QuotaLease({ store, windowAt: minuteOf, now: () => clock, recheckMs: 500 });
    expect(await lease.take()).toBe(true);
    expect(await lease.take()).toBe(true);
    expect(await lease.take()).toBe(false);
    const leases = lease.stats.leases;
    expect(await lease.take()).toBe(false);
    expect(lease.stats.leases).toBe(leases); // no store call
    clock += 500;
    expect(await lease.take()).toBe(false);
    expect(lease.stats.leases).toBe(leases + 1);
  });
});
