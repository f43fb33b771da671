import { validate as isUuid, version as uuidVersion } from "uuid";
import { describe, expect, it } from "vitest";
import type { MeterOccurrenceItem } from "#lib/db/entities/meter-occurrence.ts";
import { alertSourcesOf, type MeterAlertPolicy, occurrenceOf } from "#lib/domain/meter-alerts.ts";
import { digestNotificationId, periodsToDigest, usageNotification } from "#lib/domain/meter-digests.ts";
import { periodAt, previousPeriod } from "#lib/domain/meter-periods.ts";
import type { DecodedStreamRecord } from "#lib/streams/stream-batch.ts";

const at = Date.UTC(2026, 1, 28, 23, 59, 30); // 2026-02-28T23:59:30Z

const record = (over: Partial<DecodedStreamRecord>): DecodedStreamRecord => ({
  eventId: "e1",
  eventName: "INSERT",
  sequenceNumber: "1",
  region: "eu-west-1",
  changedAt: at,
  keys: {},
  ...over,
});

const requestLog = (metering: unknown) =>
  record({
    newImage: { entity: "requestLog", clientId: "c1", proxyId: "p1", processedAt: at - 1000, metering },
  });

const meter = (
  alerts: MeterAlertPolicy["alerts"],
  limits: MeterAlertPolicy["limits"] = null,
): MeterAlertPolicy => ({ limits, alerts });

describe("digest periods (the meters' calendar windows, UTC)", () => {
  it("a period is the window of the cadence holding the instant; the previous one ends where it starts", () => {
    expect(periodAt("minute", at)).toEqual({
      start: Date.UTC(2026, 1, 28, 23, 59),
      end: Date.UTC(2026, 2, 1),
    });
    expect(periodAt("month", at)).toEqual({ start: Date.UTC(2026, 1, 1), end: Date.UTC(2026, 2, 1) });
    expect(previousPeriod("month", periodAt("month", Date.UTC(2026, 0, 15)))).toEqual({
      start: Date.UTC(2025, 11, 1),
      end: Date.UTC(2026, 0, 1),
    });
  });

  it("digests only periods that ended a grace ago, the last few of each cadence", () => {
    const now = Date.UTC(2026, 2, 1, 0, 0, 50); // 50 s after midnight: the 23:59 minute is still in its grace
    const minutes = periodsToDigest("minute", now);
    expect(minutes).toHaveLength(15);
    expect(minutes.at(-1)).toEqual({
      start: Date.UTC(2026, 1, 28, 23, 58),
      end: Date.UTC(2026, 1, 28, 23, 59),
    });
    expect(periodsToDigest("minute", now + 10_000).at(-1)?.end).toBe(Date.UTC(2026, 2, 1));
    expect(
      periodsToDigest("month", Date.UTC(2026, 2, 1, 0, 5)).map((p) => new Date(p.start).toISOString()),
    ).toEqual(["2026-01-01T00:00:00.000Z", "2026-02-01T00:00:00.000Z"]);
  });
});

describe("alert sources of a stream record", () => {
  it("reads applied (predicate_match) and refused (exceed) meters of a request log, once each", () => {
    const sources = alertSourcesOf(
      requestLog({ applied: ["m1", "m2", "m1"], refused: [{ meterId: "m3", window: "hour" }] }),
    );
    expect(sources.map((s) => [s.trigger, s.meterId, s.window, s.at])).toEqual([
      ["predicate_match", "m1", null, at - 1000],
      ["predicate_match", "m2", null, at - 1000],
      ["exceed", "m3", "hour", at - 1000],
    ]);
  });

  it("says nothing for a request log without metering, or of an unknown proxy, or a MODIFY", () => {
    expect(alertSourcesOf(requestLog(undefined))).toEqual([]);
    expect(
      alertSourcesOf(
        record({
          newImage: { entity: "requestLog", clientId: null, proxyId: "p", metering: { applied: ["m"] } },
        }),
      ),
    ).toEqual([]);
    expect(alertSourcesOf({ ...requestLog({ applied: ["m1"] }), eventName: "MODIFY" })).toEqual([]);
  });

  it("reads a counter's change (an INSERT counts from 0) and ignores a change that is not an increase", () => {
    const counter = (value: number) => ({
      entity: "meterCounter",
      clientId: "c1",
      proxyId: "p1",
      meterId: "m1",
      window: "minute",
      value,
    });
    expect(alertSourcesOf(record({ newImage: counter(4) }))[0]?.crossing).toEqual({ before: 0, after: 4 });
    expect(
      alertSourcesOf(record({ eventName: "MODIFY", oldImage: counter(4), newImage: counter(6) }))[0]
        ?.crossing,
    ).toEqual({ before: 4, after: 6 });
    expect(
      alertSourcesOf(record({ eventName: "MODIFY", oldImage: counter(6), newImage: counter(6) })),
    ).toEqual([]);
  });
});

describe("occurrence of a source under the meter's alert policy", () => {
  const [applied] = alertSourcesOf(requestLog({ applied: ["m1"] }));
  const threshold = (before: number, after: number) => ({
    trigger: "threshold" as const,
    clientId: "c1",
    proxyId: "p1",
    meterId: "m1",
    at,
    window: "minute" as const,
    crossing: { before, after },
  });

  it("counts only for enabled alerts of the same trigger, in the cadence period holding the event", () => {
    const occurrence = occurrenceOf(
      applied!,
      meter({ enabled: true, cadence: "hour", notifyTrigger: "predicate_match" }),
    );
    expect(occurrence).toMatchObject({
      notifyTrigger: "predicate_match",
      cadence: "hour",
      periodStart: Date.UTC(2026, 1, 28, 23),
      periodEnd: Date.UTC(2026, 2, 1),
      window: null,
    });
    expect(
      occurrenceOf(applied!, meter({ enabled: false, cadence: "hour", notifyTrigger: "predicate_match" })),
    ).toBeUndefined();
    expect(
      occurrenceOf(applied!, meter({ enabled: true, cadence: "hour", notifyTrigger: "exceed" })),
    ).toBeUndefined();
    expect(occurrenceOf(applied!, meter(null))).toBeUndefined();
    expect(occurrenceOf(applied!, undefined)).toBeUndefined();
  });

  it("fires a threshold only when old < threshold <= new", () => {
    const policy = meter({
      enabled: true,
      cadence: "day",
      notifyTrigger: "threshold",
      alertThreshold: { minute: 3 },
    });
    expect(occurrenceOf(threshold(2, 3), policy)?.window).toBe("minute");
    expect(occurrenceOf(threshold(0, 10), policy)).toBeDefined();
    expect(occurrenceOf(threshold(3, 4), policy)).toBeUndefined();
    expect(occurrenceOf(threshold(1, 2), policy)).toBeUndefined();
    expect(occurrenceOf({ ...threshold(0, 10), window: "hour" }, policy)).toBeUndefined();
  });

  it("clamps the threshold to the same window's limit (spec 4.9)", () => {
    const policy = meter(
      { enabled: true, cadence: "day", notifyTrigger: "threshold", alertThreshold: { minute: 10, hour: 2 } },
      { minute: 5, hour: 100 },
    );
    expect(occurrenceOf(threshold(4, 5), policy)).toBeDefined();
    expect(occurrenceOf(threshold(5, 9), policy)).toBeUndefined();
    expect(occurrenceOf({ ...threshold(1, 2), window: "hour" }, policy)).toBeDefined();
    expect(occurrenceOf({ ...threshold(0, 50), window: "day" }, policy)).toBeUndefined();
  });
});

describe("the digest notification", () => {
  const occurrence: MeterOccurrenceItem = {
    pKey: "x",
    sKey: "y",
    entity: "meterOccurrence",
    clientId: "c1",
    proxyId: "p1",
    meterId: "m1",
    notifyTrigger: "threshold",
    cadence: "hour",
    periodStart: Date.UTC(2026, 1, 28, 23),
    periodEnd: Date.UTC(2026, 2, 1),
    occurrences: 3,
    minuteCount: 2,
    dayCount: 1,
    updatedAt: "",
    TTL: 0,
  };

  it("has a UUIDv7 id, timestamped at the period's end, the same for the same digest only", () => {
    const id = digestNotificationId(occurrence);
    expect(isUuid(id)).toBe(true);
    expect(uuidVersion(id)).toBe(7);
    expect(Number.parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBe(occurrence.periodEnd);
    expect(digestNotificationId({ ...occurrence })).toBe(id);
    expect(digestNotificationId({ ...occurrence, meterId: "m2" })).not.toBe(id);
    expect(digestNotificationId({ ...occurrence, notifyTrigger: "exceed" })).not.toBe(id);
    expect(digestNotificationId({ ...occurrence, periodStart: occurrence.periodStart + 1 })).not.toBe(id);
  });

  it("is of type usage, names the meter, and carries the digest's data", () => {
    const notification = usageNotification(occurrence, "2026-03-01T00:02:00.000Z");
    expect(notification.type).toBe("usage");
    expect(notification.message).toContain("m1");
    expect(notification.data).toEqual({
      meterId: "m1",
      proxyId: "p1",
      notifyTrigger: "threshold",
      window: "day",
      count: 3,
      periodStart: "2026-02-28T23:00:00.000Z",
      periodEnd: "2026-03-01T00:00:00.000Z",
      cadence: "hour",
      windows: { minute: 2, day: 1 },
    });
    expect(usageNotification({ ...occurrence, notifyTrigger: "predicate_match" }).data?.window).toBeNull();
  });
});
