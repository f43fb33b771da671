/**
 * Meters on a proxy (spec 2.9, 4.9): create, list, get, partial update, delete. A meter lives
 * beside its proxy in the proxy's region (lib/db/entities/meter.ts); validation and the canonical
 * shape are in lib/domain/meter-schema.ts; docs/meters.md ("API") is the reference.
 *
 * - The number of meters per proxy (MAX_METERS_PER_PROXY) is exact under concurrency: a count item
 *   beside the meters is incremented in the same transaction as the put, conditioned on being
 *   below the bound (and decremented with every delete).
 * - A meter counts as proxy configuration: every change bumps the client's `configVersion` in the
 *   proxy's region after it commits, so a warm data plane reloads the meters on the next request.
 * - Deleting a meter also deletes its shared window counters (`METERUSE#<meterId>`, a few dozen
 *   items at most: they expire an hour after their window); per-caller counters
 *   (`METERUSE#<meterId>#<callerHash>`) cannot be found without a Scan and expire by their TTL.
 */
import { randomUUID } from "node:crypto";
import { now } from "#lib/clock.ts";
import { lostRace, RACE_ATTEMPTS, tryCommitRegional } from "#lib/db/commit.ts";
import {
  checkProxyStep,
  countMeterStep,
  deleteMeterStep,
  findMeter,
  listMetersOfProxy,
  METER_STEPS,
  type MeterItem,
  meterKeys,
  putMeterStep,
  replaceMeterStep,
  uncountMeterStep,
} from "#lib/db/entities/meter.ts";
import { keys, meterOwnedRegionalPartitions } from "#lib/db/keys.ts";
import { batchGet, cancelledSteps, deletePartition, nowIso } from "#lib/db/store.ts";
import { log } from "#lib/log.ts";
import { badRequest, conflict, notFound, validationFailed } from "#lib/shared/errors.ts";
import { callerHash, countedWindows, type MeterWindow, windowAt } from "#lib/shared/meter-windows.ts";
import type { ClientAccess } from "./access.ts";
import {
  type CreateMeterInput,
  MAX_METERS_PER_PROXY,
  mergeMeterUpdate,
  meterConfigOf,
  meterConfigProblems,
  normaliseMeter,
  type UpdateMeterInput,
} from "./meter-schema.ts";
import { PROXY_NOT_FOUND, requireProxy } from "./proxies.ts";

export const METER_NOT_FOUND = "Meter not found";
export const TOO_MANY_METERS = `A proxy can have at most ${MAX_METERS_PER_PROXY} meters; delete one first`;

/** Attempts of a transaction that lost a race with another one (DynamoDB TransactionConflict). */
const ATTEMPTS = RACE_ATTEMPTS;

/** The meter as the API shows it (spec 2.9): pKey the proxy id, sKey the meter id; no internals. */
export function toApiMeter(meter: MeterItem) {
  const { entity: _entity, meterVersion: _version, valueMean: _mean, ...fields } = meter;
  return { ...fields, pKey: meter.proxyId, sKey: meter.meterId };
}

const concurrently = () => conflict("The meters of this proxy are being changed concurrently; retry");

export async function listMeters({ clientId }: ClientAccess, proxyId: string) {
  const { region } = await requireProxy(clientId, proxyId);
  return (await listMetersOfProxy(region, clientId, proxyId)).map(toApiMeter);
}

export async function getMeter({ clientId }: ClientAccess, proxyId: string, meterId: string) {
  const { region } = await requireProxy(clientId, proxyId);
  const meter = await findMeter(region, clientId, proxyId, meterId);
  if (!meter) throw notFound(METER_NOT_FOUND);
  return toApiMeter(meter);
}

/** A meter's accumulated value in the current calendar window of one kind, against its limit. */
export interface MeterWindowUsage {
  window: MeterWindow;
  windowStart: string;
  windowEnd: string;
  /** The settled value counted in the window so far (0 when nothing was counted). */
  value: number;
  /** The window's limit, null when the window has none. */
  limit: number | null;
}

/**
 * A meter's usage now: its value in the current window of each kind it counts (fixed UTC calendar
 * windows, the counters the data plane writes: the windows with a limit or an alert threshold, all
 * four for a meter with neither), each with its limit. A per-caller meter
 * (`limitBy`) counts per value of its variable: `limitByValue` chooses whose counts are read
 * (absent: the shared bucket of requests without a value). One consistent BatchGet in the
 * meter's region; a counter left by a window that has ended is never read as the current one.
 */
export async function getMeterUsage(
  { clientId }: ClientAccess,
  proxyId: string,
  meterId: string,
  limitByValue?: string,
) {
  const { region } = await requireProxy(clientId, proxyId);
  const meter = await findMeter(region, clientId, proxyId, meterId);
  if (!meter) throw notFound(METER_NOT_FOUND);
  const at = now();
  const caller = meter.limitBy ? callerHash(limitByValue ?? "") : undefined;
  const windows = countedWindows(meter).map((kind) => windowAt(kind, at));
  const counters = await batchGet(
    windows.map((window) => keys.meterWindow(meterId, window.kind, window.start, caller)),
    { region },
  );
  const usage: MeterWindowUsage[] = windows.map((window) => {
    const sKey = `${window.kind}#${window.start}`;
    const counter = counters.find((item) => item.sKey === sKey);
    const value = typeof counter?.value === "number" ? counter.value : Number(counter?.value ?? 0);
    return {
      window: window.kind,
      windowStart: new Date(window.start).toISOString(),
      windowEnd: new Date(window.end).toISOString(),
      value: Number.isFinite(value) ? value : 0,
      limit: meter.limits?.[window.kind] ?? null,
    };
  });
  return {
    meterId,
    limitBy: meter.limitBy ?? null,
    limitByValue: meter.limitBy ? (limitByValue ?? "") : null,
    usage,
  };
}

/**
 * Create a meter from a validated body (CreateMeterBody: shapes and cross-field rules checked,
 * 400 naming the field). One transaction: the proxy still exists and is not being deleted, the
 * proxy's meter count is below the bound (and incremented), the meter is written.
 */
export async function createMeter(
  { clientId, userId }: ClientAccess,
  proxyId: string,
  input: CreateMeterInput,
) {
  const { region } = await requireProxy(clientId, proxyId);
  const meterId = randomUUID();
  const now = nowIso();
  const meter: MeterItem = {
    ...meterKeys.item(clientId, proxyId, meterId),
    entity: "meter",
    meterId,
    proxyId,
    clientId,
    userId,
    parentId: proxyId,
    meterRegion: region,
    ...normaliseMeter(input),
    createdAt: now,
    updatedAt: now,
    meterVersion: 1,
  };
  const steps = [checkProxyStep(clientId, proxyId), countMeterStep(clientId, proxyId), putMeterStep(meter)];
  for (let attempt = 1; ; attempt++) {
    const written = await tryCommitRegional(region, clientId, steps, (failed) =>
      failed.includes(METER_STEPS.checkProxy)
        ? notFound(PROXY_NOT_FOUND)
        : failed.includes(METER_STEPS.count)
          ? badRequest(TOO_MANY_METERS)
          : undefined,
    );
    if (written) break;
    if (attempt >= ATTEMPTS) throw concurrently();
    await lostRace(attempt);
  }
  return toApiMeter(meter);
}

/**
 * Partial update: the fields given replace the stored ones (null clears an optional field), the
 * rest keep their values, and the merged meter is validated as a whole (400 naming the field).
 * Written only if the meter is still the version it was merged into; a concurrent update makes it
 * merge again into the newer version.
 */
export async function updateMeter(
  { clientId }: ClientAccess,
  proxyId: string,
  meterId: string,
  input: UpdateMeterInput,
) {
  const { region } = await requireProxy(clientId, proxyId);
  for (let attempt = 1; ; attempt++) {
    const current = await findMeter(region, clientId, proxyId, meterId);
    if (!current) throw notFound(METER_NOT_FOUND);
    const config = mergeMeterUpdate(meterConfigOf(current), input);
    const problems = meterConfigProblems(config);
    if (problems.length > 0) throw validationFailed(problems);
    const next: MeterItem = {
      ...current,
      ...config,
      updatedAt: nowIso(),
      meterVersion: current.meterVersion + 1,
    };
    const steps = [checkProxyStep(clientId, proxyId), replaceMeterStep(next, current.meterVersion)];
    const written = await tryCommitRegional(region, clientId, steps, (failed) =>
      failed.includes(METER_STEPS.checkProxy)
        ? notFound(PROXY_NOT_FOUND)
        : // The meter changed (or was deleted) since it was read: merge again.
          failed.includes(METER_STEPS.replace)
          ? "retry"
          : undefined,
    );
    if (written) return toApiMeter(next);
    if (attempt >= ATTEMPTS) throw concurrently();
    await lostRace(attempt);
  }
}

/** Delete a meter at once (with the proxy's count), then its shared window counters. */
export async function deleteMeter({ clientId }: ClientAccess, proxyId: string, meterId: string) {
  const { region } = await requireProxy(clientId, proxyId);
  // Only a meter (never the proxy's count, which sorts among them); the step's condition keeps it so.
  if (!(await findMeter(region, clientId, proxyId, meterId))) throw notFound(METER_NOT_FOUND);
  const steps = [deleteMeterStep(clientId, proxyId, meterId), uncountMeterStep(clientId, proxyId)];
  const gone = (failed: readonly string[]) =>
    failed.includes(METER_STEPS.delete) ? notFound(METER_NOT_FOUND) : undefined;
  for (let attempt = 1; ; attempt++) {
    let written: boolean;
    try {
      written = await tryCommitRegional(region, clientId, steps, gone);
    } catch (error) {
      if (!cancelledSteps(error, steps)?.failed.includes(METER_STEPS.uncount)) throw error;
      // A count at 0 with a meter present is a defect of the store: never block the delete on it.
      log.warn("Meter count of a proxy was 0 with a meter present", { clientId, proxyId, meterId });
      written = await tryCommitRegional(
        region,
        clientId,
        [deleteMeterStep(clientId, proxyId, meterId)],
        gone,
      );
    }
    if (written) break;
    if (attempt >= ATTEMPTS) throw concurrently();
    await lostRace(attempt);
  }
  for (const pKey of meterOwnedRegionalPartitions(meterId)) await deletePartition(pKey, { region });
}
