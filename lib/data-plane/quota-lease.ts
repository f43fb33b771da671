/**
 * Quota leasing: exact limits at rates one counter item cannot take request by request
 * (docs/scale.md).
 *
 * The window's shared counter item holds `leased`, the units handed out. A warm instance leases a
 * block of B units with one conditional ADD (`leased + B <= limit`; when fewer than B remain it
 * leases exactly what remains), spends the block locally without store calls, and gives unspent
 * units back when its window ends or when it goes idle (`release`). So:
 * - never over: every admitted request spends one unit leased under the condition, once;
 * - never lost: at the end, leased - given back = admitted, when every instance gives back (an
 *   instance that dies keeps its block: under-admission by at most one block, never over);
 * - exact: under demand above the limit the window runs dry and every leased unit is spent, so
 *   exactly `limit` requests pass.
 *
 * Block size follows the instance's own rate (`blockSeconds` of its traffic), bounded by
 * `minBlock`..`maxBlock` and by a share of what the window had left at the last lease, so blocks
 * shrink to 1 as the window runs out. The store and the clock are injected: `dynamoLeaseStore`
 * below is the store of the data plane, tested against the emulator.
 */

import { randomUUID } from "node:crypto";
import { dynamo } from "#lib/aws/clients.ts";
import { GetCommand, UpdateCommand, unmarshallItem } from "#lib/aws/document-client.ts";
import { now } from "#lib/clock.ts";
import type { Key } from "#lib/db/keys.ts";
import { isConditionalCheckFailure, tableName } from "#lib/db/store.ts";

export interface QuotaWindow {
  /** Epoch ms of the window's start (inclusive). */
  start: number;
  /** Epoch ms of the window's end (exclusive). */
  end: number;
}

export interface LeaseGrant {
  /** Units granted, from 0 to the number asked for; fewer only when that is all the window had left. */
  granted: number;
  /** Units the window had left after this lease, as the store saw it. */
  remaining: number;
  /**
   * Instances that have leased from the window so far, this one included (a store that tracks
   * them): a block is at most half of what is left shared among them.
   */
  holders?: number;
}

/** The shared counter of a limited quantity, one per window. */
export interface LeaseStore {
  lease(window: QuotaWindow, wanted: number): Promise<LeaseGrant>;
  giveBack(window: QuotaWindow, units: number): Promise<void>;
}

export interface QuotaLeaseOptions {
  store: LeaseStore;
  /** The window a moment belongs to (fixed calendar windows: lib/domain/rate-limit.ts, meters). */
  windowAt: (nowMs: number) => QuotaWindow;
  now?: () => number;
  /** Seconds of this instance's traffic one block covers. Default 1. */
  blockSeconds?: number;
  /** Default 1. */
  minBlock?: number;
  /** Default 1,000. */
  maxBlock?: number;
  /** At most this share of what the window had left at the last lease. Default 1/8. */
  maxShareOfRemaining?: number;
  /** Once the window ran dry, refuse locally this long before asking the store again. Default 250 ms. */
  recheckMs?: number;
  /** The rate (units per second) to size the first block by: what the previous window learned. */
  initialRate?: number;
  /**
   * `topUp` refills when the balance is below this many seconds of the instance's rate (and below
   * the units the next request needs). Default half of `blockSeconds`.
   */
  topUpSeconds?: number;
}

/** Units taken by one request, and the window they were taken in (to give them back). */
export interface Taken {
  units: number;
  window: QuotaWindow | undefined;
}

export interface QuotaLeaseStats {
  admitted: number;
  refused: number;
  /** Store calls that asked for units. */
  leases: number;
  leasedUnits: number;
  /** Store calls that gave units back. */
  returns: number;
  returnedUnits: number;
  /** Units whose give-back failed: counted as used in the store (under-admission, never over). */
  unreturnedUnits: number;
}

export interface BlockSizeInput {
  /** The instance's recent rate of admitted requests. */
  ratePerSecond: number;
  /** Requests of this instance waiting for this lease. */
  waiting: number;
  blockSeconds: number;
  minBlock: number;
  maxBlock: number;
  /** What the window had left at the last lease (undefined before the first one). */
  lastRemaining: number | undefined;
  maxShareOfRemaining: number;
  /** Instances leasing from the window, as the store last said (undefined: unknown, 1). */
  holders?: number;
}

/**
 * The next block to ask for: the instance's traffic for `blockSeconds`, bounded; never fewer than
 * the units requests are waiting for (they spend them at once: no share of the window is held
 * idle), so a burst at the end of a window costs one lease, not one per request.
 */
export function nextBlockSize(input: BlockSizeInput): number {
  const byRate = Math.ceil(input.ratePerSecond * input.blockSeconds);
  let size = Math.min(input.maxBlock, Math.max(input.minBlock, byRate, input.waiting));
  if (input.lastRemaining !== undefined) {
    // Blocks leased at once by every holder together stay under what is left (half of it), so
    // no instance finds the window dry while the others hold units they will not spend.
    const share = Math.min(input.maxShareOfRemaining, 1 / (2 * Math.max(1, input.holders ?? 1)));
    size = Math.min(size, Math.max(1, Math.floor(input.lastRemaining * share)));
  }
  return Math.max(1, size, Math.min(input.waiting, input.maxBlock));
}

export class QuotaLease {
  readonly stats: QuotaLeaseStats = {
    admitted: 0,
    refused: 0,
    leases: 0,
    leasedUnits: 0,
    returns: 0,
    returnedUnits: 0,
    unreturnedUnits: 0,
  };
  private readonly store: LeaseStore;
  private readonly windowAt: (nowMs: number) => QuotaWindow;
  private readonly now: () => number;
  private readonly blockSeconds: number;
  private readonly minBlock: number;
  private readonly maxBlock: number;
  private readonly maxShareOfRemaining: number;
  private readonly recheckMs: number;
  private readonly topUpSeconds: number;

  private window: QuotaWindow | undefined;
  private balance = 0;
  private exhaustedUntil = 0;
  private lastRemaining: number | undefined;
  /** Instances leasing from the current window, as the store last said. */
  private holders: number | undefined;
  private waiting = 0;
  /** The most units one waiting request lacks (the next lease covers it, above `maxBlock` too). */
  private largestShort = 0;
  private refilling: Promise<{ exhausted: boolean }> | undefined;
  private ratePerSecond = 0;
  private spentSinceLease = 0;
  private lastLeaseAt: number | undefined;
  /** Give-backs to the current window so far (a lease that raced one does not mark it dry). */
  private returnsToWindow = 0;
  /** When a request last took from this lease (epoch ms; 0: never). */
  lastUsedAt = 0;
  private readonly pending = new Set<Promise<void>>();

  constructor(options: QuotaLeaseOptions) {
    this.store = options.store;
    this.windowAt = options.windowAt;
    this.now = options.now ?? now;
    this.blockSeconds = options.blockSeconds ?? 1;
    this.minBlock = options.minBlock ?? 1;
    this.maxBlock = options.maxBlock ?? 1000;
    this.maxShareOfRemaining = options.maxShareOfRemaining ?? 1 / 8;
    this.recheckMs = options.recheckMs ?? 250;
    this.ratePerSecond = options.initialRate ?? 0;
    this.topUpSeconds = options.topUpSeconds ?? this.blockSeconds / 2;
  }

  /** The instance's smoothed rate of units spent per second (what blocks are sized by). */
  get rate(): number {
    return this.ratePerSecond;
  }

  /** The window of the units held (undefined before the first take). */
  get currentWindow(): QuotaWindow | undefined {
    return this.window;
  }

  /** Units this instance holds for the current window. */
  get held(): number {
    return this.balance;
  }

  /** Admit one request (true) or refuse it (false): a store call only when the block is spent. */
  async take(): Promise<boolean> {
    return (await this.takeUnits(1)).units === 1;
  }

  /**
   * Take `units` for one request: all of them, or 0 (refused). With `partial`, a window that has
   * fewer left than asked but some gives what it has (a response_value reservation: admitted while
   * the window has room). A store call only when the block cannot cover it.
   */
  async takeUnits(units = 1, options: { partial?: boolean } = {}): Promise<Taken> {
    const wanted = Math.max(1, Math.ceil(units));
    for (;;) {
      const now = this.now();
      this.roll(now);
      this.lastUsedAt = now;
      if (this.balance >= wanted) return this.spend(wanted);
      if (now < this.exhaustedUntil) return this.refuseOrPart(options.partial);
      const short = wanted - this.balance;
      this.waiting += short;
      // One request's need is leased whole, however many blocks it is (a reservation).
      this.largestShort = Math.max(this.largestShort, short);
      let outcome: { exhausted: boolean };
      try {
        this.refilling ??= this.refill().finally(() => {
          this.refilling = undefined;
        });
        outcome = await this.refilling;
      } finally {
        this.waiting -= short;
      }
      if (outcome.exhausted && this.balance < wanted) return this.refuseOrPart(options.partial);
    }
  }

  private spend(units: number): Taken {
    this.balance -= units;
    this.spentSinceLease += units;
    this.stats.admitted++;
    return { units, window: this.window };
  }

  private refuseOrPart(partial: boolean | undefined): Taken {
    if (partial && this.balance > 0) return this.spend(this.balance);
    this.stats.refused++;
    return { units: 0, window: this.window };
  }

  /**
   * Give back units a request took and did not use (another counter refused it, or a reservation
   * settled below what it reserved): to the local block while its window is current, else to the
   * store (no over-admission in a later window).
   */
  giveBackTaken(taken: Taken, units: number = taken.units): void {
    if (units <= 0 || !taken.window) return;
    if (this.window?.start === taken.window.start) {
      this.balance += units;
      this.spentSinceLease = Math.max(0, this.spentSinceLease - units);
    } else this.giveBack(taken.window, units);
  }

  /**
   * Spend up to `units` more for a request already admitted in `window` (a response value above
   * its reservation), from the local block when that window is current. Answers the units the
   * block could not cover: the caller adds them to the store's count (unconditionally).
   */
  spendMore(window: QuotaWindow, units: number): number {
    if (units <= 0) return 0;
    if (this.window?.start !== window.start) return units;
    const covered = Math.min(this.balance, units);
    this.balance -= covered;
    this.spentSinceLease += covered;
    return units - covered;
  }

  /**
   * After an answer, off the caller's wait: lease now when the balance is below what the next
   * moment needs (`topUpSeconds` of the instance's rate, and at least `minUnits`), so a steady
   * stream finds its units held. No call while a lease is under way or the window is dry.
   */
  async topUp(minUnits = 1): Promise<void> {
    const now = this.now();
    this.roll(now);
    if (this.refilling || now < this.exhaustedUntil) return;
    // Half a block of the instance's rate, but never more than half the block a lease would get
    // now (a share of what the window has left): else every answer would lease again.
    const block = nextBlockSize({
      ratePerSecond: this.ratePerSecond,
      waiting: 0,
      blockSeconds: this.blockSeconds,
      minBlock: this.minBlock,
      maxBlock: this.maxBlock,
      lastRemaining: this.lastRemaining,
      maxShareOfRemaining: this.maxShareOfRemaining,
      holders: this.holders,
    });
    const byRate = Math.ceil(this.ratePerSecond * this.topUpSeconds);
    const needed = Math.max(minUnits, Math.min(byRate, Math.ceil(block / 2)));
    if (this.balance >= needed) return;
    this.refilling = this.refill(minUnits).finally(() => {
      this.refilling = undefined;
    });
    await this.refilling;
  }

  /**
   * Give back what the block holds above `keep` (a reservation settled far below what it took left
   * more than the next moment needs), so other instances can lease it.
   */
  trim(keep: number): void {
    if (!this.window || this.balance <= keep) return;
    this.giveBack(this.window, this.balance - keep);
    this.balance = keep;
  }

  /**
   * The window's limit changed (configuration reloaded). Lowered: the units held go back, so the
   * next lease is decided under the new limit; raised: a dry window is asked again at once.
   */
  limitChanged(lowered: boolean): void {
    if (lowered && this.window && this.balance > 0) {
      this.giveBack(this.window, this.balance);
      this.balance = 0;
    }
    this.exhaustedUntil = 0;
    this.lastRemaining = undefined;
  }

  /**
   * Put back the unit of a request that did not go ahead after all (another of its counters
   * refused it): local, no store call. Only for a unit taken in the current window.
   */
  restore(): void {
    this.balance++;
    this.stats.admitted--;
  }

  /** Give the unspent units of the current window back now (an idle instance), and wait for it. */
  async release(): Promise<void> {
    if (this.window && this.balance > 0) this.giveBack(this.window, this.balance);
    this.balance = 0;
    await this.flush();
  }

  /** Wait for the give-backs under way. */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Move to the window of `now`, giving the previous window's unspent units back. */
  private roll(now: number): void {
    const window = this.windowAt(now);
    if (this.window?.start === window.start) return;
    if (this.window && this.balance > 0) this.giveBack(this.window, this.balance);
    this.window = window;
    this.balance = 0;
    this.exhaustedUntil = 0;
    this.lastRemaining = undefined;
    this.holders = undefined;
    this.returnsToWindow = 0;
  }

  private async refill(minUnits = 0): Promise<{ exhausted: boolean }> {
    // Units on their way back (a lowered limit, an idle hand-back) land first: a lease decided
    // before them would be refused for units this instance no longer holds.
    if (this.pending.size > 0) await this.flush();
    const window = this.window as QuotaWindow;
    // The rate since the previous lease sizes this one (measured after it, a top-up's block would
    // follow the rate of the lease before).
    this.measureRate(this.now());
    const need = this.largestShort;
    this.largestShort = 0;
    const wanted = Math.max(
      need,
      nextBlockSize({
        ratePerSecond: this.ratePerSecond,
        waiting: Math.max(this.waiting, minUnits),
        blockSeconds: this.blockSeconds,
        minBlock: this.minBlock,
        maxBlock: this.maxBlock,
        lastRemaining: this.lastRemaining,
        maxShareOfRemaining: this.maxShareOfRemaining,
        holders: this.holders,
      }),
    );
    this.stats.leases++;
    const returns = this.returnsToWindow;
    const grant = await this.store.lease(window, wanted);
    this.stats.leasedUnits += grant.granted;
    const now = this.now();
    if (this.window?.start !== window.start) {
      // The window ended while the lease was under way: its units go straight back.
      if (grant.granted > 0) this.giveBack(window, grant.granted);
      return { exhausted: false };
    }
    this.balance += grant.granted;
    // Units this instance gave back while the lease was under way may have landed after it was
    // decided: the window is not known dry, and requests waiting for units ask again.
    if (this.returnsToWindow !== returns) return { exhausted: false };
    this.lastRemaining = grant.remaining;
    if (grant.holders !== undefined) this.holders = grant.holders;
    const exhausted = grant.granted < wanted || grant.remaining <= 0;
    if (exhausted) this.exhaustedUntil = Math.min(window.end, now + this.recheckMs);
    return { exhausted: grant.granted < wanted };
  }

  /** Admitted requests per second since the previous lease, smoothed. */
  private measureRate(now: number): void {
    if (this.lastLeaseAt !== undefined) {
      const seconds = Math.max(now - this.lastLeaseAt, 1) / 1000;
      const rate = this.spentSinceLease / seconds;
      this.ratePerSecond = this.ratePerSecond === 0 ? rate : (this.ratePerSecond + rate) / 2;
    }
    this.lastLeaseAt = now;
    this.spentSinceLease = 0;
  }

  private giveBack(window: QuotaWindow, units: number): void {
    this.stats.returns++;
    if (this.window?.start === window.start) {
      // The window has room again (at least these units): a dry mark from an earlier lease no
      // longer holds, so the next request that needs more than the block asks the store (after
      // this give-back lands: `refill` flushes first) instead of being refused or cut locally.
      this.returnsToWindow++;
      this.exhaustedUntil = 0;
      if (this.lastRemaining !== undefined) this.lastRemaining += units;
    }
    const done = this.store.giveBack(window, units).then(
      () => {
        this.stats.returnedUnits += units;
      },
      () => {
        this.stats.unreturnedUnits += units;
      },
    );
    const tracked = done.finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }
}

export interface DynamoLeaseStoreOptions {
  region: string;
  /** The counter item of a window. */
  key: (window: QuotaWindow) => Key;
  /** The window's limit; a function when it can change (read at every lease). */
  limit: number | (() => number);
  /** Name of the leased-units attribute. Default "value" (the meter counter's field). */
  countAttribute?: string;
  /**
   * An attribute that counted the window before any lease (a window counted without a limit until
   * one was set, or written before leases): the first lease of such an item starts from it.
   */
  seedAttribute?: string;
  /** Further attributes of the counter item (entity, ids, window bounds), set on every lease. */
  attributes?: (window: QuotaWindow) => Record<string, unknown>;
  /** TTL (epoch seconds) of a window's item. Default: one hour after the window ends. */
  ttl?: (window: QuotaWindow) => number;
  /** Attempts of a lease that keeps meeting a smaller remainder than it asked for. Default 8. */
  maxAttempts?: number;
  /**
   * Guard every lease and give-back with a token of its own, stored on the item (`leaseToken`,
   * `returnToken`): a write the SDK sends again after its answer was lost finds its token and is
   * not applied twice (unless another lease, or give-back, of the item landed in between).
   */
  tokens?: boolean;
  /**
   * Name this store's instance in the item's `holders` (a string set) with every lease, and
   * answer the set's size with the grant: blocks are then sized by the instances sharing the
   * window (nextBlockSize). One short id per store (each instance has its own store per counter).
   */
  trackHolders?: boolean;
}

/** The attribute naming the instances that leased from a window (`trackHolders`). */
const HOLDERS_ATTRIBUTE = "holders";

/**
 * The lease store on a DynamoDB counter item: a lease is one conditional UpdateItem (1 write unit
 * for an item under 1 KB), a give-back one unconditional ADD of the negative count.
 */
export function dynamoLeaseStore(options: DynamoLeaseStoreOptions): LeaseStore {
  const limitNow = typeof options.limit === "function" ? options.limit : () => options.limit as number;
  const count = options.countAttribute ?? "value";
  const ttlOf = options.ttl ?? ((window: QuotaWindow) => Math.ceil(window.end / 1000) + 3600);
  const maxAttempts = options.maxAttempts ?? 8;
  const db = () => dynamo(options.region);

  function extraSets(window: QuotaWindow) {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const sets = Object.entries(options.attributes?.(window) ?? {}).map(([name, value], index) => {
      names[`#a${index}`] = name;
      values[`:a${index}`] = value;
      return `#a${index} = :a${index}`;
    });
    return { names, values, sets };
  }

  const seed = options.seedAttribute;
  const tokens = options.tokens ?? false;
  /** A token's condition, names and values, for one write (the SDK's retries resend it as is). */
  const guard = (attribute: string) => {
    if (!tokens) return undefined;
    return {
      condition: "(attribute_not_exists(#tok) OR #tok <> :tok)",
      set: "#tok = :tok",
      names: { "#tok": attribute },
      values: { ":tok": randomUUID() },
    };
  };
  const numberOf = (value: unknown) => (typeof value === "number" ? value : undefined);
  /** This store's holder id, added to the window's set by every lease (a set: idempotent). */
  const holder = options.trackHolders ? randomUUID().slice(0, 8) : undefined;
  const holding = holder
    ? { add: "#holders :me", names: { "#holders": HOLDERS_ATTRIBUTE }, values: { ":me": new Set([holder]) } }
    : undefined;
  const holdersIn = (attributes: Record<string, unknown> | undefined) => {
    const set = attributes?.[HOLDERS_ATTRIBUTE];
    return set instanceof Set ? { holders: set.size } : {};
  };

  /** The leased count (and the seed) in a failed condition's old image, else read them. */
  async function stateNow(window: QuotaWindow, error: unknown) {
    const old = (error as { Item?: Parameters<typeof unmarshallItem>[0] }).Item;
    const item = old
      ? unmarshallItem(old)
      : (
          await db().send(
            new GetCommand({ TableName: tableName(), Key: options.key(window), ConsistentRead: true }),
          )
        ).Item;
    return {
      leased: numberOf(item?.[count]),
      seed: seed ? numberOf(item?.[seed]) : undefined,
      token: item?.leaseToken,
    };
  }

  return {
    async lease(window, wanted) {
      const limit = limitNow();
      let ask = Math.min(wanted, limit);
      const extra = extraSets(window);
      /** The seed of an item that has one but no leases yet: the first lease starts from it. */
      let seeded: number | undefined;
      for (let attempt = 1; ask > 0; attempt++) {
        const token = guard("leaseToken");
        try {
          if (seeded !== undefined) {
            const first = await db().send(
              new UpdateCommand({
                TableName: tableName(),
                Key: options.key(window),
                UpdateExpression: `SET ${["#count = :total", "#ttl = if_not_exists(#ttl, :ttl)", ...(token ? [token.set] : []), ...extra.sets].join(", ")}${holding ? ` ADD ${holding.add}` : ""}`,
                ConditionExpression: `attribute_not_exists(#count) AND #seed = :seen${token ? ` AND ${token.condition}` : ""}`,
                ExpressionAttributeNames: {
                  "#count": count,
                  "#seed": seed as string,
                  "#ttl": "TTL",
                  ...token?.names,
                  ...holding?.names,
                  ...extra.names,
                },
                ExpressionAttributeValues: {
                  ":total": seeded + ask,
                  ":seen": seeded,
                  ":ttl": ttlOf(window),
                  ...token?.values,
                  ...holding?.values,
                  ...extra.values,
                },
                ...(holding ? { ReturnValues: "ALL_NEW" as const } : {}),
                ReturnValuesOnConditionCheckFailure: "ALL_OLD",
              }),
            );
            return { granted: ask, remaining: limit - seeded - ask, ...holdersIn(first.Attributes) };
          }
          const out = await db().send(
            new UpdateCommand({
              TableName: tableName(),
              Key: options.key(window),
              UpdateExpression: `ADD ${["#count :n", ...(holding ? [holding.add] : [])].join(", ")} SET ${["#ttl = if_not_exists(#ttl, :ttl)", ...(token ? [token.set] : []), ...extra.sets].join(", ")}`,
              ConditionExpression: `(${
                seed
                  ? "(attribute_not_exists(#count) AND attribute_not_exists(#seed)) OR #count <= :max"
                  : "attribute_not_exists(#count) OR #count <= :max"
              })${token ? ` AND ${token.condition}` : ""}`,
              ExpressionAttributeNames: {
                "#count": count,
                "#ttl": "TTL",
                ...(seed ? { "#seed": seed } : {}),
                ...token?.names,
                ...holding?.names,
                ...extra.names,
              },
              ExpressionAttributeValues: {
                ":n": ask,
                ":max": limit - ask,
                ":ttl": ttlOf(window),
                ...token?.values,
                ...holding?.values,
                ...extra.values,
              },
              // The holders' set whole, even when this store's id was in it already.
              ReturnValues: holding ? "ALL_NEW" : "UPDATED_NEW",
              ReturnValuesOnConditionCheckFailure: "ALL_OLD",
            }),
          );
          const leased = out.Attributes?.[count];
          return {
            granted: ask,
            remaining: typeof leased === "number" ? limit - leased : 0,
            ...holdersIn(out.Attributes),
          };
        } catch (error) {
          if (!isConditionalCheckFailure(error)) throw error;
          const state = await stateNow(window, error);
          // The SDK sent this lease again after its answer was lost: it was applied (once).
          if (token && state.token === token.values[":tok"])
            return { granted: ask, remaining: Math.max(0, limit - (state.leased ?? ask)) };
          seeded = state.leased === undefined ? state.seed : undefined;
          const left = limit - (state.leased ?? state.seed ?? 0);
          if (left <= 0 || attempt >= maxAttempts) return { granted: 0, remaining: Math.max(left, 0) };
          ask = Math.min(ask, left);
        }
      }
      return { granted: 0, remaining: 0 };
    },

    async giveBack(window, units) {
      if (units <= 0) return;
      const token = guard("returnToken");
      try {
        await db().send(
          new UpdateCommand({
            TableName: tableName(),
            Key: options.key(window),
            UpdateExpression: `ADD #count :n${token ? ` SET ${token.set}` : ""}`,
            ...(token ? { ConditionExpression: token.condition } : {}),
            ExpressionAttributeNames: { "#count": count, ...token?.names },
            ExpressionAttributeValues: { ":n": -units, ...token?.values },
          }),
        );
      } catch (error) {
        // Only its own token fails the guard: a retry of a give-back that was applied.
        if (!(token && isConditionalCheckFailure(error))) throw error;
      }
    },
  };
}
