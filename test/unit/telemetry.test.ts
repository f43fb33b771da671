/**
 * Telemetry aggregation (lib/domain/telemetry): bucket keys, log-scale histograms and their
 * percentiles, request-log records -> observations -> every counter map of spec 2.12, the EWMA,
 * the country, and the derived maps computed on read. Pure: no emulator.
 */
import { describe, expect, it } from "vitest";
import { buildRequestLogItem, newRequestId, type RequestLogInput } from "#lib/data-plane/request-log.ts";
import { histogramsOf, mergeBuckets, telemetryRecordOf } from "#lib/domain/telemetry/read.ts";
import {
  aggregate,
  bucketRefsOf,
  countsOf,
  deltasOf,
  emptyCounts,
  ewmaWeight,
  isError,
  isSuccess,
  mergeCounts,
  observationOf,
  type TelemetryObservation,
} from "#lib/shared/telemetry/aggregate.ts";
import { bucketAt, bucketKey, bucketKeyRange, bucketStartOf } from "#lib/shared/telemetry/buckets.ts";
import { countryOf, countrySettingsOf, UNKNOWN_COUNTRY } from "#lib/shared/telemetry/country.ts";
import {
  exactPercentile,
  HISTOGRAM_GAMMA,
  HISTOGRAM_RELATIVE_ERROR,
  histogramBucket,
  histogramPercentile,
  histogramValue,
  mergeHistograms,
} from "#lib/shared/telemetry/histogram.ts";
import { geoipCountry } from "#lib/streams/geoip.ts";

const AT = Date.UTC(2026, 2, 7, 9, 5, 30, 250); // 2026-03-07 09:05:30.250 UTC

function logItem(overrides: Partial<RequestLogInput> = {}): Record<string, unknown> {
  const receivedAt = overrides.receivedAt ?? AT;
  return buildRequestLogItem({
    requestId: newRequestId(receivedAt),
    proxy: { proxyId: "px1", clientId: "c1", userId: "u1" },
    proxyIdFromPath: "px1",
    stage: "prod",
    method: "GET",
    apiPath: "/v1/x",
    query: {},
    requestHeaders: {},
    requestBody: undefined,
    receivedAt,
    sentAt: receivedAt + 120,
    status: 200,
    message: "proxy-access-granted",
    arnBase: "arn",
    target: {
      sentAt: receivedAt + 10,
      receivedAt: receivedAt + 100,
      status: 200,
      location: null,
      responseHeaders: {},
      responseBody: undefined,
    },
    validation: {},
    processed: true,
    redactHeaders: [],
    redactQuery: [],
    retentionDays: 30,
    ...overrides,
  });
}

describe("bucket keys (UTC)", () => {
  it("names the minute, hour, day and month of an instant", () => {
    expect(bucketKey("minute", AT)).toBe("2026-03-07-09-05");
    expect(bucketKey("hour", AT)).toBe("2026-03-07-09");
    expect(bucketKey("day", AT)).toBe("2026-03-07");
    expect(bucketKey("month", AT)).toBe("2026-03");
  });

  it("uses UTC, not the local zone, at the edges of a day and a year", () => {
    const lastMs = Date.UTC(2025, 11, 31, 23, 59, 59, 999);
    expect(bucketKey("minute", lastMs)).toBe("2025-12-31-23-59");
    expect(bucketKey("month", lastMs + 1)).toBe("2026-01");
    expect(bucketKey("minute", lastMs + 1)).toBe("2026-01-01-00-00");
  });

  it("gives each bucket its window, and reads a key back to its start", () => {
    expect(bucketAt("hour", AT)).toEqual({
      key: "2026-03-07-09",
      start: Date.UTC(2026, 2, 7, 9),
      end: Date.UTC(2026, 2, 7, 10),
    });
    expect(bucketAt("month", AT).end).toBe(Date.UTC(2026, 3, 1));
    for (const interval of ["minute", "hour", "day", "month"] as const)
      expect(bucketStartOf(interval, bucketKey(interval, AT))).toBe(bucketAt(interval, AT).start);
    expect(bucketStartOf("hour", "2026-03-07")).toBeUndefined();
    expect(bucketStartOf("day", "2026-02-30")).toBeUndefined();
  });

  it("sorts as text in time order, so a date range is a sort-key range", () => {
    const times = [AT, AT + 59_000, AT + 3_600_000, AT + 40 * 86_400_000];
    for (const interval of ["minute", "hour", "day", "month"] as const) {
      const keysInOrder = times.map((t) => bucketKey(interval, t));
      expect([...keysInOrder].sort()).toEqual(keysInOrder);
    }
    expect(bucketKeyRange("day", AT, AT + 2 * 86_400_000)).toEqual({ from: "2026-03-07", to: "2026-03-09" });
  });
});

describe("log-scale histograms", () => {
  it("reads every bucket back within the documented relative error", () => {
    for (let ms = 1; ms < 80_000; ms = Math.ceil(ms * 1.003)) {
      const value = histogramValue(histogramBucket(ms));
      expect(Math.abs(value - ms) / ms).toBeLessThanOrEqual(HISTOGRAM_RELATIVE_ERROR + 1e-12);
    }
    expect(HISTOGRAM_GAMMA).toBeCloseTo(1.0202, 4);
  });

  it("puts durations below 1 ms (and nonsense) in bucket 0, read as 0", () => {
    expect(histogramBucket(0)).toBe(0);
    expect(histogramBucket(0.5)).toBe(0);
    expect(histogramBucket(Number.NaN)).toBe(0);
    expect(histogramValue(0)).toBe(0);
    expect(histogramBucket(1)).toBe(1);
  });

  it("keeps buckets monotonic and bounded: 75 s is bucket 563", () => {
    expect(histogramBucket(75_000)).toBe(563);
    let last = 0;
    for (let ms = 1; ms < 100_000; ms += 37) {
      const bucket = histogramBucket(ms);
      expect(bucket).toBeGreaterThanOrEqual(last);
      last = bucket;
    }
  });

  it("gives nearest-rank percentiles within 1 % of the raw ones, also after merging", () => {
    const values = Array.from({ length: 997 }, (_, i) => Math.round(3 + ((i * 7919) % 2003) ** 1.3));
    const halves = [values.slice(0, 400), values.slice(400)];
    const histogramOf = (vs: number[]) => {
      const h = new Map<number, number>();
      for (const v of vs) h.set(histogramBucket(v), (h.get(histogramBucket(v)) ?? 0) + 1);
      return h;
    };
    const merged = mergeHistograms(halves.map(histogramOf));
    for (const p of [0.01, 0.5, 0.95, 0.99, 1]) {
      const raw = exactPercentile(values, p) as number;
      const estimate = histogramPercentile(merged, p) as number;
      expect(Math.abs(estimate - raw) / raw).toBeLessThanOrEqual(HISTOGRAM_RELATIVE_ERROR + 1e-12);
    }
    expect(histogramPercentile(new Map(), 0.5)).toBeNull();
    expect(exactPercentile([], 0.5)).toBeNull();
    expect(exactPercentile([5, 1, 3, 2, 4], 0.5)).toBe(3);
  });
});

describe("country", () => {
  const trusted = { trustViewerCountry: true };

  it("takes CloudFront-Viewer-Country in any case, upper-cased and checked, when CloudFront is trusted", () => {
    expect(countryOf({ "CloudFront-Viewer-Country": "de" }, undefined, undefined, trusted)).toBe("DE");
    expect(countryOf({ "cloudfront-viewer-country": ["FR"] }, undefined, undefined, trusted)).toBe("FR");
    expect(countryOf({ "cloudfront-viewer-country": "Germany" }, undefined, undefined, trusted)).toBe(
      UNKNOWN_COUNTRY,
    );
  });

  it("ignores CloudFront-Viewer-Country by default: any caller can send it to a function URL", () => {
    expect(countryOf({ "CloudFront-Viewer-Country": "de" })).toBe(UNKNOWN_COUNTRY);
    expect(countryOf({ "cloudfront-viewer-country": "US" }, "203.0.113.9", () => "JP")).toBe("JP");
    expect(
      countryOf({ "cloudfront-viewer-country": "US" }, "203.0.113.9", () => "JP", {
        trustViewerCountry: false,
      }),
    ).toBe("JP");
  });

  it("falls back to the GeoIP lookup, then to XX; a failing lookup is XX", () => {
    expect(countryOf({}, "203.0.113.9", () => "jp")).toBe("JP");
    expect(countryOf({ "cloudfront-viewer-country": "US" }, "203.0.113.9", () => "JP", trusted)).toBe("US");
    expect(countryOf({}, "203.0.113.9", () => undefined)).toBe("XX");
    expect(
      countryOf({}, "203.0.113.9", () => {
        throw new Error("db");
      }),
    ).toBe("XX");
    expect(countryOf(undefined)).toBe("XX");
  });

  it('reads the setting TRUST_CLOUDFRONT_VIEWER_COUNTRY: off unless "true", a typo refused', () => {
    expect(countrySettingsOf({})).toEqual({ trustViewerCountry: false });
    expect(countrySettingsOf({ TRUST_CLOUDFRONT_VIEWER_COUNTRY: "" })).toEqual({ trustViewerCountry: false });
    expect(countrySettingsOf({ TRUST_CLOUDFRONT_VIEWER_COUNTRY: "false" })).toEqual({
      trustViewerCountry: false,
    });
    expect(countrySettingsOf({ TRUST_CLOUDFRONT_VIEWER_COUNTRY: "true" })).toEqual({
      trustViewerCountry: true,
    });
    expect(() => countrySettingsOf({ TRUST_CLOUDFRONT_VIEWER_COUNTRY: "yes" })).toThrow(
      /TRUST_CLOUDFRONT_VIEWER_COUNTRY: must be true or false/,
    );
  });
});

describe("the GeoIP database (lib/streams/geoip.ts, the telemetry consumer's lookup)", () => {
  it("maps public IPv4, IPv6 and IPv4-mapped addresses to their country; private and bad addresses to none", () => {
    expect(geoipCountry("8.8.8.8")).toBe("US");
    expect(geoipCountry("81.2.69.160")).toBe("GB");
    expect(geoipCountry("::ffff:193.0.6.139")).toBe("NL");
    expect(geoipCountry("2001:67c:2e8::1")).toBe("NL"); // RIPE NCC's own range
    expect(geoipCountry("127.0.0.1")).toBeUndefined();
    expect(geoipCountry("10.1.2.3")).toBeUndefined();
    expect(geoipCountry("not-an-address")).toBeUndefined();
    expect(countryOf({}, "not-an-address", geoipCountry)).toBe("XX");
  });

  it("gives a request log's stored caller address its country, the header first only when trusted", () => {
    const viaIp = observationOf(logItem({ sourceIp: "81.2.69.160" }), geoipCountry);
    expect(viaIp?.country).toBe("GB");
    const spoofed = logItem({
      sourceIp: "81.2.69.160",
      requestHeaders: { "cloudfront-viewer-country": "fr" },
    });
    expect(observationOf(spoofed, geoipCountry)?.country).toBe("GB");
    expect(observationOf(spoofed, geoipCountry, { trustViewerCountry: true })?.country).toBe("FR");
    expect(observationOf(logItem({ sourceIp: "127.0.0.1" }), geoipCountry)?.country).toBe("XX");
  });
});

describe("observations of request-log records", () => {
  it("reads both legs with their statuses and response times (ms)", () => {
    const observation = observationOf(
      logItem({ requestHeaders: { "cloudfront-viewer-country": "NL" } }),
      undefined,
      { trustViewerCountry: true },
    );
    expect(observation).toEqual({
      clientId: "c1",
      proxyId: "px1",
      at: AT,
      country: "NL",
      legs: [
        { source: "proxy", status: 200, ms: 120 },
        { source: "target", status: 200, ms: 90 },
      ],
    });
  });

  it("has only the proxy leg when the request did not reach the target (a denial)", () => {
    const observation = observationOf(logItem({ status: 403, target: null }));
    expect(observation?.legs).toEqual([{ source: "proxy", status: 403, ms: 120 }]);
    expect(observation?.country).toBe("XX");
  });

  it("counts nothing for a record of an unknown proxy (no client) or another entity", () => {
    expect(observationOf(logItem({ proxy: null }))).toBeUndefined();
    expect(observationOf({ entity: "meterCounter", clientId: "c1" })).toBeUndefined();
    expect(observationOf(undefined)).toBeUndefined();
  });

  it("defines success as 2xx/3xx and error as 4xx/5xx", () => {
    expect([199, 200, 302, 399, 400].map(isSuccess)).toEqual([false, true, true, true, false]);
    expect([399, 400, 404, 503, 599, 600].map(isError)).toEqual([false, true, true, true, true, false]);
  });
});

describe("aggregation", () => {
  const observation = (over: Partial<TelemetryObservation> = {}): TelemetryObservation => ({
    clientId: "c1",
    proxyId: "px1",
    at: AT,
    country: "DE",
    legs: [
      { source: "proxy", status: 200, ms: 120 },
      { source: "target", status: 200, ms: 90 },
    ],
    ...over,
  });

  it("adds each request to 8 buckets: client and proxy, minute to month", () => {
    const refs = bucketRefsOf(observation());
    expect(refs.map((r) => `${r.scope}:${r.interval}:${r.bucket}`)).toEqual([
      "client:minute:2026-03-07-09-05",
      "proxy:minute:2026-03-07-09-05",
      "client:hour:2026-03-07-09",
      "proxy:hour:2026-03-07-09",
      "client:day:2026-03-07",
      "proxy:day:2026-03-07",
      "client:month:2026-03",
      "proxy:month:2026-03",
    ]);
    expect(refs.filter((r) => r.scope === "proxy").every((r) => r.proxyId === "px1")).toBe(true);
  });

  it("fills every map of spec 2.12 per source and per status:source and country:source", () => {
    const denied = observation({ legs: [{ source: "proxy", status: 403, ms: 4 }], country: "XX" });
    const targetError = observation({
      legs: [
        { source: "proxy", status: 502, ms: 300 },
        { source: "target", status: 500, ms: 280 },
      ],
    });
    const hour = aggregate([observation(), observation(), denied, targetError]).find(
      (d) => d.ref.scope === "client" && d.ref.interval === "hour",
    );
    expect(hour?.counts).toMatchObject({
      countMap: { proxy: 4, target: 3 },
      successCountMap: { proxy: 2, target: 2 },
      errorCountMap: { proxy: 2, target: 1 },
      totalResponseTimeMap: { proxy: 120 + 120 + 4 + 300, target: 90 + 90 + 280 },
      codeCountMap: { "200:proxy": 2, "200:target": 2, "403:proxy": 1, "502:proxy": 1, "500:target": 1 },
      codeTotalRTMap: {
        "200:proxy": 240,
        "200:target": 180,
        "403:proxy": 4,
        "502:proxy": 300,
        "500:target": 280,
      },
      countryCountMap: { "DE:proxy": 3, "DE:target": 3, "XX:proxy": 1 },
      countryTotalRTMap: { "DE:proxy": 540, "DE:target": 460, "XX:proxy": 4 },
    });
    const histogramTotal = Object.values(hour?.counts.histogramMap ?? {}).reduce((a, b) => a + b, 0);
    expect(histogramTotal).toBe(7);
  });

  it("sums a batch per bucket: one delta per bucket, whatever the number of requests", () => {
    const other = observation({ proxyId: "px2", at: AT + 60_000 });
    const deltas = aggregate([observation(), observation(), other]);
    // client: 2 minutes + hour + day + month; px1: 4; px2: 4
    expect(deltas).toHaveLength(5 + 4 + 4);
    const month = deltas.find((d) => d.ref.scope === "client" && d.ref.interval === "month");
    expect(month?.counts.countMap).toEqual({ proxy: 3, target: 3 });
    expect(
      mergeCounts(
        deltasOf(observation())
          .slice(0, 1)
          .map((d) => d.counts),
      ).countMap,
    ).toEqual({
      proxy: 1,
      target: 1,
    });
  });

  it("weights the EWMA by time within the bucket (e^(Δt/τ), τ = bucket/8) on the proxy leg", () => {
    const window = { start: 0, end: 80_000 };
    expect(ewmaWeight(window, 0)).toBe(1);
    expect(ewmaWeight(window, 10_000)).toBeCloseTo(Math.E, 12);
    expect(ewmaWeight(window, 80_000)).toBeCloseTo(Math.exp(8), 6);
    const early = countsOf(observation({ at: 0, legs: [{ source: "proxy", status: 200, ms: 100 }] }), window);
    const late = countsOf(
      observation({ at: 10_000, legs: [{ source: "proxy", status: 200, ms: 200 }] }),
      window,
    );
    const record = telemetryRecordOf("b", mergeCounts([early, late]));
    // (1·100 + e·200) / (1 + e): nearer the later value
    expect(record.ewmaResponseTime).toBeCloseTo((100 + Math.E * 200) / (1 + Math.E), 9);
    expect(telemetryRecordOf("b", emptyCounts()).ewmaResponseTime).toBeNull();
  });
});

describe("records as read: derived maps and merges", () => {
  const counts = aggregate([
    ...Array.from({ length: 9 }, (_, i) => ({
      clientId: "c1",
      proxyId: "px1",
      at: AT,
      country: i < 6 ? "DE" : "FR",
      legs: [
        { source: "proxy" as const, status: 200, ms: 100 + i * 10 },
        { source: "target" as const, status: 200, ms: 50 + i * 10 },
      ],
    })),
    {
      clientId: "c1",
      proxyId: "px1",
      at: AT,
      country: "FR",
      legs: [{ source: "proxy" as const, status: 429, ms: 2 }],
    },
  ]).find((d) => d.ref.scope === "client" && d.ref.interval === "day")?.counts;

  it("computes averages, rates, country averages and percentiles, never storing them", () => {
    const record = telemetryRecordOf("2026-03-07", counts ?? emptyCounts());
    expect(record.countMap).toEqual({ proxy: 10, target: 9 });
    expect(record.successRateMap).toEqual({ proxy: 0.9, target: 1 });
    expect(record.errorRateMap).toEqual({ proxy: 0.1, target: 0 });
    expect(record.averageResponseTimeMap.proxy).toBeCloseTo((9 * 100 + 360 + 2) / 10, 9);
    expect(record.countryAverageRTMap["DE:proxy"]).toBeCloseTo((6 * 100 + 150) / 6, 9);
    expect(record.countryAverageRTMap["FR:proxy"]).toBeCloseTo((160 + 170 + 180 + 2) / 4, 9);
    const raw = [2, ...Array.from({ length: 9 }, (_, i) => 100 + i * 10)];
    for (const [name, p] of [
      ["p50ResponseTimeMap", 0.5],
      ["p95ResponseTimeMap", 0.95],
      ["p99ResponseTimeMap", 0.99],
    ] as const) {
      const exact = exactPercentile(raw, p) as number;
      expect(Math.abs((record[name].proxy as number) - exact) / exact).toBeLessThanOrEqual(0.01);
    }
    expect(histogramsOf(counts ?? emptyCounts()).get("target")?.size).toBeGreaterThan(0);
  });

  it("merges buckets of the same key from several regions by summing, in key order, bounded", () => {
    const one = counts ?? emptyCounts();
    const merged = mergeBuckets(
      [
        { bucket: "2026-03-08", counts: one },
        { bucket: "2026-03-07", counts: one },
        { bucket: "2026-03-07", counts: one },
      ],
      {},
    );
    expect(merged.map((r) => r.sKey)).toEqual(["2026-03-07", "2026-03-08"]);
    expect(merged[0]?.countMap).toEqual({ proxy: 20, target: 18 });
    expect(merged[0]?.successRateMap).toEqual({ proxy: 0.9, target: 1 });
    expect(
      mergeBuckets(
        [
          { bucket: "a", counts: one },
          { bucket: "b", counts: one },
        ],
        { newestFirst: true, limit: 1 },
      ).map((r) => r.sKey),
    ).toEqual(["b"]);
  });
});
