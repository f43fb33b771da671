/**
 * The counter items of the data plane: the plan's rate limit, a managed client's limits and every
 * meter window are counter items in the region's table, each a fixed calendar window
 * (lib/shared/meter-windows.ts). A limited window's admissions are decided from quota leases on
 * its `leased` attribute (counter-leases.ts); a meter window's `value` is the admitted count.
 *
 * Here: the items' keys, and the transaction actions that add to them after the answer with the
 * request log (settlementSteps and writeSettlement in lib/data-plane/meter-settlement.ts).
 *
 * `commitCounters` is the former per-request count transaction (every limited window and the
 * `configVersion` check in ONE TransactWriteItems, idempotent by its `ClientRequestToken`): no
 * longer on the data plane's path, kept for the scale simulation (bench/scale-sim.ts) that
 * compares it with leases.
 */
import { createHash } from "node:crypto";
import { type Key, keys } from "#lib/db/keys.ts";
import { cancelledSteps, commitSteps, type TransactionStep, tableName } from "#lib/db/store.ts";
import { type CalendarWindow, counterTtl } from "#lib/shared/meter-windows.ts";

/** What a counter item records besides its value (for the stream consumers and for reads). */
export interface CounterOwner {
  entity: "meterCounter" | "rateCounter" | "clientCounter";
  clientId: string;
  /** The proxy of the request (a client counter, shared by the client's proxies, stores none). */
  proxyId: string;
  /**
   * The meter's id (stored as `meterId`); for the rate counter, the proxy credential's id
   * (`credentialId`); for a client counter, the client's id (stored once, as `clientId`).
   */
  counterOf: string;
}

/** The attribute naming what a counter counts, beside `clientId`. */
export const OWNER_ATTRIBUTE = { meterCounter: "meterId", rateCounter: "credentialId" } as const;

export interface CounterStep {
  /** Unique within the transaction; a refusal is reported by this name. */
  name: string;
  key: Key;
  window: CalendarWindow;
  owner: CounterOwner;
  /**
   * `add`: add `amount` to `value`, refused when the value would go above `limit`.
   * `reserve` (a limited window of a response_value meter): add `amount` to `charged` (the value
   * plus the reservations in flight) and 1 to `inflight`, refused when the value or `charged` has
   * already reached `limit`: a request is admitted while both are below it.
   */
  mode: "add" | "reserve";
  amount: number;
  limit?: number;
  /** A settlement of a reservation: `amount` is the real value, this what was reserved. */
  reserved?: number;
  /**
   * Added to the item's `leased` with `amount` (an `add` without limit after the answer): a
   * response value above the units its lease reserved and its block could cover
   * (counter-leases.ts).
   */
  leaseDelta?: number;
}

/** A client's configVersion at admission: the transaction is refused as stale if it moved. */
export interface VersionCheck {
  clientId: string;
  version: number;
}

export type CountDecision =
  | { outcome: "counted" }
  | { outcome: "refused"; refused: string[] }
  | { outcome: "stale" };

/** An idempotency token (at most 36 characters) for one transaction of one request. */
export function clientRequestToken(requestId: string, purpose: string): string {
  return createHash("sha256").update(`${requestId}\u0000${purpose}`).digest("hex").slice(0, 36);
}

function counterAction(step: CounterStep): TransactionStep {
  const reserve = step.mode === "reserve";
  const settle = step.reserved !== undefined;
  const limited = step.limit !== undefined;
  const leased = !reserve && !settle && !limited && step.leaseDelta !== undefined && step.leaseDelta !== 0;
  const owner = step.owner.entity === "clientCounter" ? undefined : OWNER_ATTRIBUTE[step.owner.entity];
  return {
    name: step.name,
    action: {
      Update: {
        TableName: tableName(),
        Key: step.key,
        // reserve: the room an in-flight request holds (`charged` = value + reservations in flight);
        // settle: the real value, and the reservation given back (docs/meters.md "Reservations").
        UpdateExpression:
          `ADD ${reserve ? "#c :amount, #n :n" : settle ? "#v :amount, #c :back, #n :n" : leased ? "#v :amount, #l :lease" : "#v :amount"} ` +
          "SET #ttl = if_not_exists(#ttl, :ttl), entity = :entity, clientId = :clientId, " +
          `${owner ? "proxyId = :proxyId, #owner = :counterOf, " : ""}#window = :window, windowStart = :start, windowEnd = :end`,
        ...(limited
          ? {
              ConditionExpression: reserve
                ? "(attribute_not_exists(#v) OR #v < :limit) AND (attribute_not_exists(#c) OR #c < :limit)"
                : "attribute_not_exists(#v) OR #v <= :limit",
            }
          : {}),
        ExpressionAttributeNames: {
          "#ttl": "TTL",
          "#window": "window",
          ...(!reserve || limited ? { "#v": "value" } : {}),
          ...(reserve || settle ? { "#c": "charged", "#n": "inflight" } : {}),
          ...(leased ? { "#l": "leased" } : {}),
          ...(owner ? { "#owner": owner } : {}),
        },
        ExpressionAttributeValues: {
          ":amount": step.amount,
          ...(leased ? { ":lease": step.leaseDelta } : {}),
          ":ttl": counterTtl(step.window),
          ":entity": step.owner.entity,
          ":clientId": step.owner.clientId,
          ...(owner ? { ":proxyId": step.owner.proxyId, ":counterOf": step.owner.counterOf } : {}),
          ":window": step.window.kind,
          ":start": step.window.start,
          ":end": step.window.end,
          ...(reserve
            ? { ":n": 1 }
            : settle
              ? { ":n": -1, ":back": step.amount - (step.reserved as number) }
              : {}),
          ...(limited ? { ":limit": reserve ? step.limit : (step.limit as number) - step.amount } : {}),
        },
      },
    },
  };
}

function versionAction(check: VersionCheck): TransactionStep {
  return {
    name: "configVersion",
    action: {
      ConditionCheck: {
        TableName: tableName(),
        Key: keys.clientRuntime(check.clientId),
        ConditionExpression:
          check.version === 0
            ? "attribute_not_exists(configVersion) OR configVersion = :version"
            : "configVersion = :version",
        ExpressionAttributeValues: { ":version": check.version },
      },
    },
  };
}

/** The named transaction steps for these counters (and the version check, when given). */
export function counterTransaction(
  steps: readonly CounterStep[],
  version: VersionCheck | undefined,
): TransactionStep[] {
  return [...steps.map(counterAction), ...(version ? [versionAction(version)] : [])];
}

/**
 * Count the request in every step, or in none: `refused` names the steps whose limit it would
 * break, `stale` says the configuration changed since admission (nothing counted either way).
 * Transaction conflicts with concurrent requests are retried here a few times with jitter; a
 * conflict that persists is thrown (the caller answers 503).
 */
export async function commitCounters(
  region: string,
  steps: readonly CounterStep[],
  options: { version?: VersionCheck; token: string },
): Promise<CountDecision> {
  const transaction = counterTransaction(steps, options.version);
  if (transaction.length === 0) return { outcome: "counted" };
  try {
    const refused = await commitSteps<CountDecision>(transaction, {
      region,
      token: options.token,
      attempts: 4,
      backoff: (attempt) => 5 * attempt + Math.random() * 10 * attempt,
      cancelled: ({ failed }) => {
        if (failed.includes("configVersion")) return { outcome: "stale" };
        return failed.length > 0 ? { outcome: "refused", refused: failed } : undefined;
      },
    });
    return refused ?? { outcome: "counted" };
  } catch (error) {
    if (!cancelledSteps(error, transaction)?.conflict) throw error;
    // Still losing to concurrent transactions: the store is busy, the caller may retry (503).
    const busy = new Error("The counters kept conflicting with concurrent transactions", { cause: error });
    busy.name = "TransactionConflictException";
    throw busy;
  }
}

/**
 * Counter keys: the rate window of a proxy credential, a managed client's minute or day window
 * (`RATE#CLIENT#<clientId>#<window>`), and a meter's window (per caller, optionally).
 */
export const counterKeys = {
  rate: (credentialId: string, window: CalendarWindow): Key =>
    keys.rateWindow(`CRED#${credentialId}`, window.start),
  client: (clientId: string, window: CalendarWindow): Key =>
    keys.rateWindow(`CLIENT#${clientId}#${window.kind}`, window.start),
  meter: (meterId: string, callerHash: string | undefined, window: CalendarWindow): Key =>
    keys.meterWindow(meterId, window.kind, window.start, callerHash),
};
