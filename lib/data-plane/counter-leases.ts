/**
 * The data plane's limited counters on quota leases (docs/data-plane.md "Counting", docs/scale.md).
 * Loaded on demand at the first count (not at a cold start).
 *
 * Every window that can refuse a request (the plan's rate window per proxy credential, a managed
 * client's minute and day windows, each limited window of a meter) is counted from a `QuotaLease`
 * (quota-lease.ts) this warm instance holds: one per counter item (its key), in a registry of the
 * data-plane object. The lease accounting is the counter item's `leased` attribute (a conditional
 * ADD: `leased + block <= limit`, the limit read at every lease, so an edited limit applies to the
 * next lease); the item's `value` stays the admitted count, added after the answer with the request
 * log (meter windows: every reader of `value` sees admitted requests only, never blocks held).
 *
 * - Taking a request takes from every lease it needs in parallel (a store call only for a lease
 *   whose block cannot cover it); when one refuses, the units taken from the others go back to
 *   their blocks (local): all or nothing.
 * - A response_value window reserves `reservationOf(mean, limit)` value units (admitted while the
 *   window has any left: it then takes what is left); the settlement gives the difference back to
 *   the block, or spends more of it, and adds what the block cannot cover to `leased` in the write
 *   after the answer.
 * - After the answer (`TakenCounters.topUp`), every lease the request used is topped up when its
 *   balance is below the instance's next moment: a steady stream leases off the caller's wait.
 * - Unspent units go back when a window ends and when a lease has been idle `idleMs` (an unref'd
 *   timer). A frozen Lambda instance keeps its block until it thaws or is gone: under-admission by
 *   at most one block per instance, never over-admission.
 */
import { describeError, log } from "#lib/log.ts";
import { type CalendarWindow, counterTtl } from "#lib/shared/meter-windows.ts";
import { type CounterStep, OWNER_ATTRIBUTE } from "./counters.ts";
import { Freshness, type FreshnessSettings, freshnessSettings } from "./freshness.ts";
import { dynamoLeaseStore, type LeaseStore, QuotaLease, type Taken } from "./quota-lease.ts";

export interface CounterLeaseOptions {
  now?: () => number;
  /** Units held by a lease no request took from for this long go back. Default 10 s. */
  idleMs?: number;
  /** How often held units are looked at (ended windows, idle leases). Default 1 s. */
  sweepMs?: number;
  /** Seconds of this instance's traffic one block covers. Default 1. */
  blockSeconds?: number;
  /** The shared count of a step's counter item (default: its `leased` in the region's table). */
  store?: (step: CounterStep, limit: () => number) => LeaseStore;
}

interface Entry {
  lease: QuotaLease;
  /** The limit the lease asks under (changed when a reloaded configuration changes it). */
  limit: { value: number };
  window: CalendarWindow;
  /** The counter across its windows (the item's partition and the window kind). */
  series: string;
}

interface Held {
  step: CounterStep;
  entry: Entry;
  taken: Taken;
  /** A reservation's settled value (what the next request of the meter is likely to reserve). */
  settled?: number;
}

/** What the limited counters an admitted request passed hold for it until it is settled. */
export class TakenCounters {
  constructor(
    private readonly held: readonly Held[],
    private readonly blockSeconds = 1,
  ) {}

  /** The configuration was stale: every unit goes back (the request is decided again). */
  restore(): void {
    for (const { entry, taken } of this.held) entry.lease.giveBackTaken(taken);
  }

  /** The units a reserving step took (its reservation), undefined when it took none. */
  reserved(stepName: string): number | undefined {
    return this.held.find(({ step }) => step.name === stepName)?.taken.units;
  }

  /**
   * Settle a reservation at the real value: less gives the rest back to the block; more is spent
   * from the block when it can. Answers what the store's `leased` must still add (0 or more).
   */
  settle(stepName: string, value: number): number {
    const held = this.held.find(({ step }) => step.name === stepName);
    if (!held?.taken.window) return 0;
    held.settled = value;
    const delta = value - held.taken.units;
    if (delta <= 0) {
      held.entry.lease.giveBackTaken(held.taken, -delta);
      return 0;
    }
    return held.entry.lease.spendMore(held.taken.window, delta);
  }

  /**
   * After the answer: top up every lease the request used (never throws). A settled reservation
   * sizes its lease by the value (the next reservation is about that): its block keeps at most
   * two of them or a block of its rate, the rest goes back to the store.
   */
  async topUp(): Promise<void> {
    await Promise.all(
      this.held.map(({ step, entry, settled }) => {
        let next = step.amount;
        if (settled !== undefined) {
          next = Math.max(1, settled);
          entry.lease.trim(Math.max(2 * next, Math.ceil(entry.lease.rate * this.blockSeconds)));
        }
        return entry.lease.topUp(next).catch((error: unknown) => {
          log.warn("Quota lease could not be topped up", { ...describeError(error), counter: step.name });
        });
      }),
    );
  }
}

export type TakeOutcome = { refused: string[] } | { taken: TakenCounters };

/** The attributes a counter item carries besides its counts (for its readers and its TTL). */
function ownerAttributes(step: CounterStep): Record<string, unknown> {
  const { owner, window } = step;
  const named = owner.entity === "clientCounter" ? undefined : OWNER_ATTRIBUTE[owner.entity];
  return {
    entity: owner.entity,
    clientId: owner.clientId,
    ...(named ? { proxyId: owner.proxyId, [named]: owner.counterOf } : {}),
    window: window.kind,
    windowStart: window.start,
    windowEnd: window.end,
  };
}

/** The leases of one data-plane object (one warm instance). */
export class CounterLeases {
  private readonly entries = new Map<string, Entry>();
  /** The newest entry of each series: a new window's first block is sized by its rate. */
  private readonly latest = new Map<string, Entry>();
  private readonly now: () => number;
  private readonly idleMs: number;
  private readonly sweepMs: number;
  private readonly blockSeconds: number;
  private readonly storeOf: (step: CounterStep, limit: () => number) => LeaseStore;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly region: string,
    options: CounterLeaseOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.idleMs = options.idleMs ?? 10_000;
    this.sweepMs = options.sweepMs ?? 1000;
    this.blockSeconds = options.blockSeconds ?? 1;
    this.storeOf =
      options.store ??
      ((step, limit) => {
        const { key, window } = step;
        const attributes = ownerAttributes(step);
        return dynamoLeaseStore({
          region: this.region,
          key: () => key,
          limit,
          countAttribute: "leased",
          // A window counted before it had a limit (or before leases) starts from its count.
          seedAttribute: "value",
          tokens: true,
          trackHolders: true,
          attributes: () => attributes,
          ttl: () => counterTtl(window),
        });
      });
  }

  /** Leases held (tests, the bench). */
  get size(): number {
    return this.entries.size;
  }

  /** Units this instance holds in the counter item `key` (tests). */
  heldAt(key: { pKey: string; sKey: string }): number {
    return this.entries.get(`${key.pKey}\u0000${key.sKey}`)?.lease.held ?? 0;
  }

  /**
   * Take the request in every limited step, or in none: `refused` names the steps whose window
   * has no room. A store failure is thrown, with every unit taken given back.
   */
  async take(steps: readonly CounterStep[]): Promise<TakeOutcome> {
    const limited = steps.filter((step) => step.limit !== undefined);
    const entries = limited.map((step) => this.entryOf(step));
    const outcomes = await Promise.allSettled(
      limited.map((step, index) =>
        (entries[index] as Entry).lease.takeUnits(step.amount, { partial: step.mode === "reserve" }),
      ),
    );
    const held: Held[] = [];
    const refused: string[] = [];
    let failure: unknown;
    outcomes.forEach((outcome, index) => {
      const step = limited[index] as CounterStep;
      if (outcome.status === "rejected") failure ??= outcome.reason;
      else if (outcome.value.units === 0) refused.push(step.name);
      else held.push({ step, entry: entries[index] as Entry, taken: outcome.value });
    });
    if (failure !== undefined || refused.length > 0) {
      for (const { entry, taken } of held) entry.lease.giveBackTaken(taken);
      if (failure !== undefined) throw failure;
      return { refused };
    }
    return { taken: new TakenCounters(held, this.blockSeconds) };
  }

  /** Give every unit held back now and wait for it (an instance shutting down, tests). */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.entries.values()].map((entry) => entry.lease.release()));
  }

  /** Drop the registry without giving anything back (tests: an instance that died). */
  abandon(): void {
    this.entries.clear();
    this.latest.clear();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private entryOf(step: CounterStep): Entry {
    const id = `${step.key.pKey}\u0000${step.key.sKey}`;
    const limit = step.limit as number;
    const known = this.entries.get(id);
    if (known) {
      if (known.limit.value !== limit) {
        const lowered = limit < known.limit.value;
        known.limit.value = limit;
        known.lease.limitChanged(lowered);
      }
      return known;
    }
    const series = `${step.key.pKey}\u0000${step.window.kind}`;
    const holder = { value: limit };
    const { window } = step;
    const initialRate = this.latest.get(series)?.lease.rate;
    const entry: Entry = {
      lease: new QuotaLease({
        store: this.storeOf(step, () => holder.value),
        windowAt: () => window,
        now: this.now,
        blockSeconds: this.blockSeconds,
        ...(initialRate ? { initialRate } : {}),
      }),
      limit: holder,
      window,
      series,
    };
    this.entries.set(id, entry);
    this.latest.set(series, entry);
    this.timer ??= setInterval(() => this.sweep(), this.sweepMs).unref();
    return entry;
  }

  /**
   * Ended windows and idle leases give their units back; the registry keeps only live leases. Run
   * by an unref'd timer every `sweepMs` while leases are held (public for tests).
   */
  sweep(): void {
    const now = this.now();
    for (const [id, entry] of this.entries) {
      const ended = now >= entry.window.end;
      const idle = now - entry.lease.lastUsedAt >= this.idleMs;
      if (!ended && !idle) continue;
      if (entry.lease.held > 0) void entry.lease.release();
      this.entries.delete(id);
    }
    for (const [series, entry] of this.latest)
      if (now - entry.lease.lastUsedAt >= this.idleMs) this.latest.delete(series);
    if (this.entries.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/**
 * The count stage's counting for one data-plane object (pipeline.ts): its leases, and the
 * freshness check in the mode of the environment (read once here) unless `freshness` is given.
 */
export function createCounting(
  region: string,
  options: CounterLeaseOptions & { freshness?: FreshnessSettings } = {},
) {
  const leases = new CounterLeases(region, options);
  const freshness = new Freshness(region, options.freshness ?? freshnessSettings(), options.now);
  return {
    leases,
    freshness,
    take: (steps: readonly CounterStep[]) => leases.take(steps),
    isCurrent: (clientId: string, version: number, fresh: boolean) =>
      freshness.isCurrent(clientId, version, fresh),
    afterAnswer: (clientId: string) => freshness.refresh(clientId),
  };
}
