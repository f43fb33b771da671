/**
 * The data plane's limited counters on quota leases (lib/data-plane/counter-leases.ts, and the
 * parts of lib/data-plane/quota-lease.ts it adds), with an injected clock and an in-memory store
 * that several registries (instances) share: all-or-nothing takes, reservations of value units and
 * their settlement, the top-up after the answer and its sizing, hand-back when a window ends or a
 * lease is idle, a limit changed mid-window. The same against the emulator:
 * test/integration/counter-leases.test.ts.
 */
import { describe, expect, it } from "vitest";
import { CounterLeases, type TakeOutcome } from "#lib/data-plane/counter-leases.ts";
import { type CounterStep, counterKeys } from "#lib/data-plane/counters.ts";
import { type LeaseStore, nextBlockSize, QuotaLease, type QuotaWindow } from "#lib/data-plane/quota-lease.ts";
import { type CalendarWindow, windowAt } from "#lib/shared/meter-windows.ts";

const T0 = Date.UTC(2026, 0, 15, 12, 0, 0);

/** One shared table: the leased count per counter item, and the store calls made. */
function sharedStore() {
  const leased = new Map<string, number>();
  const calls = { lease: 0, giveBack: 0 };
  const storeOf = (step: CounterStep, limit: () => number): LeaseStore => {
    const id = `${step.key.pKey}|${step.key.sKey}`;
    return {
      async lease(_window, wanted) {
        calls.lease++;
        const left = limit() - (leased.get(id) ?? 0);
        const granted = Math.max(0, Math.min(wanted, left));
        leased.set(id, (leased.get(id) ?? 0) + granted);
        return { granted, remaining: limit() - (leased.get(id) ?? 0) };
      },
      async giveBack(_window, units) {
        calls.giveBack++;
        leased.set(id, (leased.get(id) ?? 0) - units);
      },
    };
  };
  const leasedOf = (step: CounterStep) => leased.get(`${step.key.pKey}|${step.key.sKey}`) ?? 0;
  /** An overshoot of a settlement, added unconditionally by the write after the answer. */
  const add = (step: CounterStep, units: number) => {
    const id = `${step.key.pKey}|${step.key.sKey}`;
    leased.set(id, (leased.get(id) ?? 0) + units);
  };
  return { storeOf, calls, leasedOf, add };
}

function clock(start = T0) {
  let at = start;
  return {
    now: () => at,
    advance: (ms: number) => {
      at += ms;
    },
  };
}

const rateStep = (limit: number, at = T0, credentialId = "cred-1"): CounterStep => {
  const window = windowAt("minute", at);
  return {
    name: "rate",
    key: counterKeys.rate(credentialId, window),
    window,
    owner: { entity: "rateCounter", clientId: "c", proxyId: "p", counterOf: credentialId },
    mode: "add",
    amount: 1,
    limit,
  };
};

const meterStep = (limit: number, amount = 1, at = T0): CounterStep => {
  const window = windowAt("hour", at);
  return {
    name: "meter:m:hour",
    key: counterKeys.meter("m", undefined, window),
    window,
    owner: { entity: "meterCounter", clientId: "c", proxyId: "p", counterOf: "m" },
    mode: amount === 1 ? "add" : "reserve",
    amount,
    limit,
  };
};

const taken = (outcome: TakeOutcome) => {
  if (!("taken" in outcome)) throw new Error(`refused: ${outcome.refused.join(", ")}`);
  return outcome.taken;
};

describe("CounterLeases.take", () => {
  it("takes one unit of every limited step; a refusal by one gives the others' units back (all or none)", async () => {
    const store = sharedStore();
    const time = clock();
    const leases = new CounterLeases("eu-west-1", { now: time.now, store: store.storeOf });
    const rate = rateStep(100);
    const meter = meterStep(2);
    for (let i = 0; i < 2; i++) taken(await leases.take([rate, meter]));
    expect(await leases.take([rate, meter])).toEqual({ refused: ["meter:m:hour"] });
    // The rate unit the refused request took is back in the block: of what the rate window leased,
    // exactly the two admitted requests are spent.
    expect(leases.heldAt(rate.key)).toBeGreaterThan(0);
    expect(store.leasedOf(rate) - leases.heldAt(rate.key)).toBe(2);
    // A step without a limit is not leased.
    const unlimited: CounterStep = { ...rate, name: "free", limit: undefined };
    taken(await leases.take([unlimited]));
    expect(leases.size).toBe(2);
  });

  it("several instances on one window admit exactly the limit; every unit given back at the end is accounted", async () => {
    const store = sharedStore();
    const time = clock();
    const instances = Array.from(
      { length: 5 },
      () => new CounterLeases("eu-west-1", { now: time.now, store: store.storeOf }),
    );
    const step = rateStep(37);
    const outcomes = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (instances[i % 5] as CounterLeases).take([step])),
    );
    const admitted = outcomes.filter((outcome) => "taken" in outcome).length;
    expect(admitted).toBe(37);
    await Promise.all(instances.map((instance) => instance.releaseAll()));
    expect(store.leasedOf(step)).toBe(37);
  });

  it("an instance dropped mid-window without giving back never lets the others over the limit", async () => {
    const store = sharedStore();
    const time = clock();
    const [a, b] = [0, 1].map(
      () => new CounterLeases("eu-west-1", { now: time.now, store: store.storeOf }),
    ) as [CounterLeases, CounterLeases];
    const step = rateStep(40);
    let admitted = 0;
    for (let i = 0; i < 3; i++) if ("taken" in (await a.take([step]))) admitted++;
    const topped = taken(await a.take([step]));
    admitted++;
    await topped.topUp(); // a holds a block now
    const lost = a.heldAt(step.key);
    expect(lost).toBeGreaterThan(0);
    a.abandon(); // killed: its block is never given back
    for (let i = 0; i < 100; i++) if ("taken" in (await b.take([step]))) admitted++;
    expect(admitted).toBe(40 - lost); // under by a's block, never over
    expect(store.leasedOf(step)).toBe(40);
  });
});

describe("reservations of value units", () => {
  it("takes the reservation, or what the window has left (admitted while it has room); refused once it has none", async () => {
    const store = sharedStore();
    const leases = new CounterLeases("eu-west-1", { now: clock().now, store: store.storeOf });
    const reserve = meterStep(100, 40);
    const first = taken(await leases.take([reserve]));
    const second = taken(await leases.take([reserve]));
    const third = taken(await leases.take([reserve])); // 20 left: takes 20
    expect(await leases.take([reserve])).toEqual({ refused: ["meter:m:hour"] });
    // Settled: below the reservation goes back to the block; above is spent from it, and what it
    // cannot cover is for the write after the answer.
    expect(first.settle("meter:m:hour", 10)).toBe(0);
    expect(leases.heldAt(reserve.key)).toBe(30);
    expect(second.settle("meter:m:hour", 50)).toBe(0); // 10 more, from the block
    expect(leases.heldAt(reserve.key)).toBe(20);
    const extra = third.settle("meter:m:hour", 45); // took 20, 25 more: the block has 20
    expect(extra).toBe(5);
    store.add(reserve, extra);
    expect(leases.heldAt(reserve.key)).toBe(0);
    await leases.releaseAll();
    // The store counts exactly the values: 10 + 50 + 45.
    expect(store.leasedOf(reserve)).toBe(105);
  });

  it("a settled reservation far below what it took keeps two values in the block and gives the rest back", async () => {
    const store = sharedStore();
    const leases = new CounterLeases("eu-west-1", { now: clock().now, store: store.storeOf });
    const reserve = meterStep(1000, 1000); // no mean known yet: the whole limit
    const held = taken(await leases.take([reserve]));
    expect(held.settle("meter:m:hour", 5)).toBe(0);
    await held.topUp();
    expect(leases.heldAt(reserve.key)).toBe(10);
    await leases.releaseAll();
    expect(store.leasedOf(reserve)).toBe(5);
  });
});

describe("a window this instance gave units back to after it ran dry", () => {
  /** A store whose give-backs land only when the test lets them (`land`). */
  function gatedStore() {
    const shared = sharedStore();
    const held: (() => void)[] = [];
    const storeOf = (step: CounterStep, limit: () => number): LeaseStore => {
      const inner = shared.storeOf(step, limit);
      return {
        lease: (window, wanted) => inner.lease(window, wanted),
        giveBack: (window, units) =>
          new Promise<void>((resolve) => held.push(resolve)).then(() => inner.giveBack(window, units)),
      };
    };
    const land = async () => {
      for (const resolve of held.splice(0)) resolve();
      await new Promise((resolve) => setTimeout(resolve, 0));
    };
    return { ...shared, storeOf, land, inFlight: () => held.length };
  }

  it("a reservation settled at 0 and trimmed back: the next requests lease the room again inside the dry mark (40 + 40 at 100 after a failed request)", async () => {
    const store = gatedStore();
    const time = clock();
    const leases = new CounterLeases("eu-west-1", { now: time.now, store: store.storeOf });
    // No mean yet: the first request reserves the whole limit, the window runs dry (marked for 250 ms).
    const first = taken(await leases.take([meterStep(100, 100)]));
    expect(first.settle("meter:m:hour", 40)).toBe(0);
    await first.topUp();
    expect(leases.heldAt(meterStep(100).key)).toBe(60);
    time.advance(50);
    // A request whose target fails: settled at 0, its reservation back in the block, and the
    // top-up trims the block to what a value of 0 needs: 58 units go back to the store.
    const failed = taken(await leases.take([meterStep(100, 40)]));
    expect(failed.settle("meter:m:hour", 0)).toBe(0);
    await failed.topUp();
    expect(leases.heldAt(meterStep(100).key)).toBe(2);
    expect(store.inFlight()).toBe(1);
    time.advance(100); // still inside the dry mark of the first lease
    // The window has room (58): the next request of 40 gets its whole reservation, leased after
    // the give-back lands (not the 2 the block holds, cut by a dry mark that no longer holds).
    const pending = leases.take([meterStep(100, 40)]);
    await store.land();
    const second = taken(await pending);
    expect(second.reserved("meter:m:hour")).toBe(40);
    expect(second.settle("meter:m:hour", 40)).toBe(0);
    await second.topUp();
    await store.land();
    // And the one after it is admitted too (80 is below 100): it takes what is left.
    const third = taken(await leases.take([meterStep(100, 40)]));
    expect(third.reserved("meter:m:hour")).toBe(20);
    const extra = third.settle("meter:m:hour", 40);
    store.add(meterStep(100), extra);
    const releasing = leases.releaseAll();
    await store.land();
    await releasing;
    // The store counts exactly the values: 40 + 0 + 40 + 40.
    expect(store.leasedOf(meterStep(100))).toBe(120);
  });

  it("a lease that raced this instance's own give-back does not mark the window dry: the waiting request asks again", async () => {
    const time = clock();
    const window = windowAt("minute", T0);
    let leased = 0;
    let gate: (() => void) | undefined;
    const store: LeaseStore = {
      async lease(_w, wanted) {
        // Decided when asked, answered when the test lets it.
        const granted = Math.max(0, Math.min(wanted, 10 - leased));
        leased += granted;
        await new Promise<void>((resolve) => {
          gate = resolve;
        });
        return { granted, remaining: 10 - leased };
      },
      async giveBack(_w, units) {
        leased -= units;
      },
    };
    const lease = new QuotaLease({ store, windowAt: () => window, now: time.now });
    const all = lease.takeUnits(10);
    gate?.();
    expect((await all).units).toBe(10);
    lease.giveBackTaken({ units: 3, window }); // to the block: the store still counts 10
    time.advance(300); // past the dry mark
    const waiting = lease.takeUnits(5, { partial: true }); // 2 short: a lease of 0 is under way
    await new Promise((resolve) => setTimeout(resolve, 0));
    lease.trim(0); // another request's top-up gives the 3 held back meanwhile
    expect(leased).toBe(7);
    gate?.();
    await new Promise((resolve) => setTimeout(resolve, 0));
    gate?.(); // the lease asked again after the give-back
    expect((await waiting).units).toBe(3);
  });
});

describe("the top-up after the answer", () => {
  it("a steady stream leases off the caller's wait: after the first request, no take waits for the store", async () => {
    const store = sharedStore();
    const time = clock();
    const leases = new CounterLeases("eu-west-1", { now: time.now, store: store.storeOf });
    const step = rateStep(100_000);
    let onTheWait = 0;
    for (let i = 0; i < 200; i++) {
      const before = store.calls.lease;
      const held = taken(await leases.take([step]));
      if (store.calls.lease > before) onTheWait++;
      await held.topUp();
      time.advance(10); // 100 requests a second
    }
    expect(onTheWait).toBe(1);
    // Blocks follow the rate: about half a second of it at a time, not one unit per request.
    expect(store.calls.lease).toBeLessThan(20);
  });

  it("a block capped by the window's share is topped up once half of it is spent, not after every answer", async () => {
    const store = sharedStore();
    const time = clock();
    const leases = new CounterLeases("eu-west-1", { now: time.now, store: store.storeOf });
    const step = rateStep(100); // blocks of at most 1/8 of what is left: 12
    const serve = async () => {
      const held = taken(await leases.take([step]));
      time.advance(30); // the answer, then the top-up
      await held.topUp();
      time.advance(150);
    };
    await serve(); // leases 1 on the wait, then a block of 12 (its rate looks like 33/s)
    expect(store.calls.lease).toBe(2);
    // Half a second of 33/s would be 17 units, above the block the window's share allows: the
    // threshold is half that block (6), so the next answers lease nothing.
    await serve();
    await serve();
    expect(store.calls.lease).toBe(2);
    expect(leases.heldAt(step.key)).toBe(10);
  });

  it("sizes the block by the instance's rate, bounded by a share of what the window has left", async () => {
    const time = clock();
    let asked: number[] = [];
    const store: LeaseStore = {
      async lease(_window, wanted) {
        asked.push(wanted);
        return { granted: wanted, remaining: 10_000 - wanted };
      },
      async giveBack() {},
    };
    const window: QuotaWindow = { start: T0, end: T0 + 3_600_000 };
    const lease = new QuotaLease({ store, windowAt: () => window, now: time.now });
    expect(await lease.take()).toBe(true); // first: one unit, on the wait
    for (let i = 0; i < 50; i++) {
      time.advance(20); // 50 a second
      if (lease.held > 0) expect(await lease.take()).toBe(true);
      await lease.topUp();
    }
    expect(asked[0]).toBe(1);
    // Later blocks: about a second of 50/s.
    expect(Math.max(...asked.slice(1))).toBeGreaterThanOrEqual(25);
    expect(Math.max(...asked.slice(1))).toBeLessThanOrEqual(1250); // 1/8 of what was left
    asked = [];
    // A full balance asks nothing.
    await lease.topUp();
    expect(asked).toEqual([]);
  });
});

describe("nextBlockSize with requests waiting", () => {
  it("asks for every unit requests wait for, above the share of what the window has left (spent at once, never held)", () => {
    const base = {
      ratePerSecond: 500,
      blockSeconds: 1,
      minBlock: 1,
      maxBlock: 1000,
      lastRemaining: 20,
      maxShareOfRemaining: 1 / 8,
    };
    expect(nextBlockSize({ ...base, waiting: 1 })).toBe(2); // a share of 20
    expect(nextBlockSize({ ...base, waiting: 9 })).toBe(9); // the burst waiting: one lease
    expect(nextBlockSize({ ...base, waiting: 5000 })).toBe(1000); // at most maxBlock
  });
});

describe("hand-back", () => {
  it("a window that ended and a lease idle for idleMs give their units back; the registry forgets them", async () => {
    const store = sharedStore();
    const time = clock(T0 + 10_000);
    const leases = new CounterLeases("eu-west-1", { now: time.now, store: store.storeOf, idleMs: 5000 });
    const minute = rateStep(1000, time.now());
    const hour = meterStep(1000, 1, time.now());
    const first = taken(await leases.take([minute, hour]));
    time.advance(20);
    await first.topUp();
    expect(leases.heldAt(minute.key)).toBeGreaterThan(0);
    expect(leases.heldAt(hour.key)).toBeGreaterThan(0);
    // The minute ends: its units go back; the hour's lease was used 50 s ago, now idle too.
    time.advance(50_000);
    leases.sweep();
    await new Promise((resolve) => setImmediate(resolve));
    expect(leases.size).toBe(0);
    expect(store.leasedOf(minute)).toBe(1);
    expect(store.leasedOf(hour)).toBe(1);
  });

  it("a lowered limit gives the units held back and the next lease asks under the new limit; a raised one is asked again", async () => {
    const store = sharedStore();
    const leases = new CounterLeases("eu-west-1", { now: clock().now, store: store.storeOf });
    const at = (limit: number) => meterStep(limit);
    for (let i = 0; i < 3; i++) taken(await leases.take([at(10)]));
    expect(await leases.take([at(3)])).toEqual({ refused: ["meter:m:hour"] });
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.leasedOf(at(3))).toBe(3); // only what was admitted stays leased
    taken(await leases.take([at(4)])); // raised: one more
    expect(await leases.take([at(4)])).toEqual({ refused: ["meter:m:hour"] });
  });

  it("a stale configuration gives every unit back to its block", async () => {
    const store = sharedStore();
    const leases = new CounterLeases("eu-west-1", { now: clock().now, store: store.storeOf });
    const step = meterStep(1);
    taken(await leases.take([step])).restore();
    taken(await leases.take([step])); // the same unit, no second lease
    expect(store.calls.lease).toBe(1);
  });
});

describe("QuotaLease.takeUnits", () => {
  it("a reservation larger than a block is leased in one store call, not a block at a time", async () => {
    let calls = 0;
    let left = 1e9;
    const store: LeaseStore = {
      async lease(_w, wanted) {
        calls++;
        const granted = Math.min(wanted, left);
        left -= granted;
        return { granted, remaining: left };
      },
      async giveBack(_w, units) {
        left += units;
      },
    };
    const lease = new QuotaLease({ store, windowAt: () => windowAt("month", T0), now: clock().now });
    // No mean known yet: the whole month's limit (the bench's response_value meter).
    expect((await lease.takeUnits(1e9, { partial: true })).units).toBe(1e9);
    expect(calls).toBe(1);
    // A window with less left than the reservation: what it has, in one call.
    left = 5000;
    const second = new QuotaLease({ store, windowAt: () => windowAt("month", T0), now: clock().now });
    calls = 0;
    expect((await second.takeUnits(20_000, { partial: true })).units).toBe(5000);
    expect(calls).toBe(1);
  });

  it("gives a window of fewer units than asked what it has only when partial; restores to the taken window only", async () => {
    const time = clock();
    let window: CalendarWindow = windowAt("minute", T0);
    let left = 5;
    const store: LeaseStore = {
      async lease(_w, wanted) {
        const granted = Math.min(wanted, left);
        left -= granted;
        return { granted, remaining: left };
      },
      async giveBack() {},
    };
    const lease = new QuotaLease({ store, windowAt: () => window, now: time.now });
    expect((await lease.takeUnits(8)).units).toBe(0);
    expect((await lease.takeUnits(8, { partial: true })).units).toBe(5);
    const held = await lease.takeUnits(1, { partial: true });
    expect(held.units).toBe(0);
    const earlier = { units: 3, window };
    window = windowAt("minute", T0 + 60_000);
    time.advance(60_000);
    left = 2;
    expect((await lease.takeUnits(1)).units).toBe(1); // in the new window (a block of 1)
    lease.giveBackTaken(earlier); // to the store, not into the new window's block
    expect(lease.held).toBe(0);
    lease.giveBackTaken({ units: 1, window }); // the current window's: to the block
    expect(lease.held).toBe(1);
  });
});
