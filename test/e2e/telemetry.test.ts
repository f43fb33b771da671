/**
 * Telemetry over real HTTP (issue 11, "Aggregation"): proxied requests through the local stack's
 * data plane -> request logs in the regional table -> its stream, polled into the telemetry
 * consumer (functions/telemetry-stream.ts) -> telemetry buckets. A mixed run (successes, denials,
 * target errors, two proxies, some requests with a CloudFront-Viewer-Country of their own making)
 * gives exact counts in every interval, per client and per proxy, within 30 s of the last request;
 * the percentiles are checked against the raw durations of the request logs. The stack does not
 * trust that header (no CloudFront in front: TRUST_CLOUDFRONT_VIEWER_COUNTRY is off by default), so
 * every request counts for the country of its loopback address: XX.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TelemetryRecordSchema } from "#lib/api/operations/telemetry.ts";
import { listRequestLogsOfProxy } from "#lib/db/entities/request-log.ts";
import { listTelemetryBuckets } from "#lib/db/entities/telemetry.ts";
import { keys as tableKeys } from "#lib/db/keys.ts";
import { PERCENTILES, telemetryRecordOf } from "#lib/domain/telemetry/read.ts";
import { mergeCounts, type TelemetryCounts } from "#lib/shared/telemetry/aggregate.ts";
import { bucketKey, TELEMETRY_INTERVALS, type TelemetryInterval } from "#lib/shared/telemetry/buckets.ts";
import { exactPercentile, HISTOGRAM_RELATIVE_ERROR } from "#lib/shared/telemetry/histogram.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  createProxyParts,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "#test/support/stack.ts";

const REGION = "eu-west-1";
const KEY = "telemetry-caller-key-1234567890";

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let target: Server;
const proxies: string[] = [];

beforeAll(async () => {
  target = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const delay = Number(new URL(req.url ?? "/", "http://x").searchParams.get("delay") ?? 0);
      setTimeout(() => {
        const failing = req.url?.startsWith("/fail");
        res.writeHead(failing ? 500 : 200, { "content-type": "application/json" });
        res.end(failing ? '{"error":"boom"}' : '{"ok":true}');
      }, delay);
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  stack = await startTestStack({ streams: true });
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Observed");
  const parts = await createProxyParts(owner, clientId, {
    region: REGION,
    key: KEY,
    targetBaseURL: `http://127.0.0.1:${(target.address() as AddressInfo).port}`,
  });
  for (const name of ["a", "b"]) {
    const proxy = await created(
      owner.api.post(`/api/clients/${clientId}/proxies`, {
        proxyName: `telemetry-${name}`,
        proxyRegion: REGION,
        proxyProxyCredentialId: parts.proxyCredentialId,
        proxyTargetId: parts.targetId,
        proxyTargetCredentialId: parts.targetCredentialId,
      }),
      "proxies",
    );
    proxies.push(proxy.proxyId as string);
  }
});

afterAll(async () => {
  await stack?.stop();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
});

async function sumOfBuckets(
  scope: "client" | "proxy",
  id: string,
  interval: TelemetryInterval,
  from: number,
  to: number,
) {
  const stored = await listTelemetryBuckets(REGION, {
    scope,
    id,
    interval,
    from: bucketKey(interval, from),
    to: bucketKey(interval, to),
    limit: 1000,
  });
  return mergeCounts(stored.map((bucket) => bucket.counts));
}

describe("telemetry of a mixed run, over real HTTP", () => {
  it("counts every request exactly, in every interval, per client and per proxy, within 30 s", async () => {
    const [a, b] = proxies as [string, string];
    const started = Date.now();
    const plan: {
      proxyId: string;
      path: string;
      key: string;
      country?: string;
      expectStatus: number;
      target: number | null;
    }[] = [
      ...Array.from({ length: 8 }, (_, i) => ({
        proxyId: a,
        path: `/ok?delay=${i * 7}`,
        key: KEY,
        country: i < 3 ? "de" : undefined,
        expectStatus: 200,
        target: 200,
      })),
      { proxyId: a, path: "/fail", key: KEY, expectStatus: 500, target: 500 },
      { proxyId: a, path: "/fail", key: KEY, country: "FR", expectStatus: 500, target: 500 },
      { proxyId: a, path: "/ok", key: "wrong-key-000000000000000000", expectStatus: 403, target: null },
      { proxyId: b, path: "/ok", key: "wrong-key-000000000000000000", expectStatus: 403, target: null },
      ...Array.from({ length: 5 }, (_, i) => ({
        proxyId: b,
        path: `/ok?delay=${20 + i * 5}`,
        key: KEY,
        expectStatus: 200,
        target: 200,
      })),
    ];
    for (const step of plan) {
      const response = await callDataPlane(`${stack.regions[REGION]}/api/${step.proxyId}${step.path}`, {
        headers: {
          "x-api-key": step.key,
          ...(step.country ? { "cloudfront-viewer-country": step.country } : {}),
        },
      });
      expect(response.status, response.text).toBe(step.expectStatus);
    }
    const lastRequest = Date.now();

    const expected = (only?: string) => {
      const steps = plan.filter((step) => !only || step.proxyId === only);
      const reached = steps.filter((step) => step.target !== null);
      const codes: Record<string, number> = {};
      const countries: Record<string, number> = {};
      for (const step of steps) {
        codes[`${step.expectStatus}:proxy`] = (codes[`${step.expectStatus}:proxy`] ?? 0) + 1;
        // The spoofed header is ignored; a loopback caller has no country.
        const country = "XX";
        countries[`${country}:proxy`] = (countries[`${country}:proxy`] ?? 0) + 1;
        if (step.target !== null) {
          codes[`${step.target}:target`] = (codes[`${step.target}:target`] ?? 0) + 1;
          countries[`${country}:target`] = (countries[`${country}:target`] ?? 0) + 1;
        }
      }
      const ok = (status: number) => status < 400;
      return {
        countMap: { proxy: steps.length, target: reached.length },
        successCountMap: {
          proxy: steps.filter((s) => ok(s.expectStatus)).length,
          target: reached.filter((s) => ok(s.target as number)).length,
        },
        errorCountMap: {
          proxy: steps.filter((s) => !ok(s.expectStatus)).length,
          target: reached.filter((s) => !ok(s.target as number)).length,
        },
        codeCountMap: codes,
        countryCountMap: countries,
      };
    };

    // The background poller only (no drain): the records must arrive on their own, within 30 s.
    let counts: TelemetryCounts | undefined;
    while (Date.now() - lastRequest < 30_000) {
      counts = await sumOfBuckets("client", clientId, "minute", started, Date.now());
      if ((counts.countMap.proxy ?? 0) >= plan.length) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const latency = Date.now() - lastRequest;
    console.log(`telemetry visible ${latency} ms after the last request`);
    expect(counts?.countMap.proxy).toBe(plan.length);
    await stack.streams?.drain();

    const now = Date.now();
    for (const interval of TELEMETRY_INTERVALS) {
      for (const [scope, id, only] of [
        ["client", clientId, undefined],
        ["proxy", a, a],
        ["proxy", b, b],
      ] as const) {
        const sum = await sumOfBuckets(scope, id, interval, started, now);
        const want = expected(only);
        const label = `${scope} ${id} ${interval}`;
        expect(sum.countMap, label).toEqual(want.countMap);
        expect(sum.successCountMap, label).toEqual(want.successCountMap);
        expect(Object.fromEntries(Object.entries(sum.errorCountMap).filter(([, n]) => n > 0)), label).toEqual(
          Object.fromEntries(Object.entries(want.errorCountMap).filter(([, n]) => n > 0)),
        );
        expect(sum.codeCountMap, label).toEqual(want.codeCountMap);
        expect(sum.countryCountMap, label).toEqual(want.countryCountMap);
      }
    }

    // Percentiles of the client's day against the raw durations of its request logs.
    const logs = (
      await Promise.all(
        proxies.map((proxyId) => listRequestLogsOfProxy(REGION, { proxyId, clientId, max: 100 })),
      )
    ).flat();
    expect(logs).toHaveLength(plan.length);
    const raw = {
      proxy: logs.map((log) => (log.proxyData?.sentAt ?? 0) - (log.proxyData?.receivedAt ?? 0)),
      target: logs.flatMap((log) =>
        log.targetData ? [log.targetData.receivedAt - log.targetData.sentAt] : [],
      ),
    };
    const record = telemetryRecordOf("run", await sumOfBuckets("client", clientId, "month", started, now));
    expect(record.totalResponseTimeMap).toEqual({
      proxy: raw.proxy.reduce((x, y) => x + y, 0),
      target: raw.target.reduce((x, y) => x + y, 0),
    });
    for (const source of ["proxy", "target"] as const) {
      for (const [name, p] of Object.entries(PERCENTILES)) {
        const exact = exactPercentile(raw[source], p) as number;
        const estimate = record[`${name}ResponseTimeMap` as "p50ResponseTimeMap"][source] as number;
        if (exact < 1) expect(estimate).toBe(0);
        else
          expect(Math.abs(estimate - exact) / exact, `${source} ${name}`).toBeLessThanOrEqual(
            HISTOGRAM_RELATIVE_ERROR + 1e-9,
          );
      }
    }
    expect(record.successRateMap.proxy).toBeCloseTo(13 / plan.length, 12);
    expect(record.ewmaResponseTime).toBeGreaterThan(0);
  }, 120_000);
});

describe("telemetry routes (4.1, 4.7), over real HTTP", () => {
  const US = "us-east-1";
  const telemetryPath = (client: string, query = "", proxyId?: string) =>
    `/api/clients/${client}${proxyId ? `/proxies/${proxyId}` : ""}/telemetry${query}`;

  it("answers the client's buckets merged across regions, and each proxy's own, in every interval", async () => {
    const client = await createClientFor(owner, "Two regions");
    const proxyIn = async (region: string) => {
      const parts = await createProxyParts(owner, client, {
        region,
        key: KEY,
        targetBaseURL: `http://127.0.0.1:${(target.address() as AddressInfo).port}`,
      });
      const proxy = await created(
        owner.api.post(`/api/clients/${client}/proxies`, {
          proxyName: `telemetry-${region}`,
          proxyRegion: region,
          proxyProxyCredentialId: parts.proxyCredentialId,
          proxyTargetId: parts.targetId,
          proxyTargetCredentialId: parts.targetCredentialId,
        }),
        "proxies",
      );
      return proxy.proxyId as string;
    };
    const [eu, us] = [await proxyIn(REGION), await proxyIn(US)];
    const started = Date.now();
    const send = async (region: string, proxyId: string, path: string) =>
      callDataPlane(`${stack.regions[region]}/api/${proxyId}${path}`, { headers: { "x-api-key": KEY } });
    for (const path of ["/ok", "/fail"]) expect((await send(REGION, eu, path)).status).toBeGreaterThan(0);
    for (const path of ["/ok", "/ok", "/fail"]) expect((await send(US, us, path)).status).toBeGreaterThan(0);

    // Both regions' consumers write their own buckets; the route merges them.
    let answer: { status: number; body: Record<string, any> } | undefined;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      answer = await owner.api.get(telemetryPath(client, "?interval=month"));
      const months = (answer.body?.telemetry ?? []) as { countMap: Record<string, number> }[];
      if (months.reduce((sum, record) => sum + (record.countMap.proxy ?? 0), 0) >= 5) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(answer?.status).toBe(200);
    expect(answer?.body).toMatchObject({ message: "Telemetry retrieved", interval: "month" });
    const months = answer?.body.telemetry as Record<string, any>[];
    expect(months).toHaveLength(1); // one bucket, both regions summed (the run does not span a month end)
    expect(months[0]).toMatchObject({
      pKey: client,
      sKey: bucketKey("month", started),
      countMap: { proxy: 5, target: 5 },
      successCountMap: { proxy: 3, target: 3 },
      errorCountMap: { proxy: 2, target: 2 },
      codeCountMap: { "200:proxy": 3, "500:proxy": 2, "200:target": 3, "500:target": 2 },
      countryCountMap: { "XX:proxy": 5, "XX:target": 5 },
      successRateMap: { proxy: 0.6, target: 0.6 },
      errorRateMap: { proxy: 0.4, target: 0.4 },
    });
    expect(months[0]!.p50ResponseTimeMap.proxy).toBeGreaterThanOrEqual(0);
    // Exactly the declared fields: no stored attribute (TTL, the raw counters) reaches the caller.
    expect(() => TelemetryRecordSchema.strict().parse(months[0])).not.toThrow();
    expect(months[0]!.averageResponseTimeMap.proxy).toBeCloseTo(months[0]!.totalResponseTimeMap.proxy / 5, 9);
    await stack.streams?.drain();

    // Every interval: the sum over the listed buckets is the run.
    for (const interval of TELEMETRY_INTERVALS) {
      const listed = await owner.api.get(
        telemetryPath(client, `?interval=${interval}&startDate=${new Date(started - 1000).toISOString()}`),
      );
      expect(listed.status, interval).toBe(200);
      const total = (listed.body.telemetry as { countMap: Record<string, number> }[]).reduce(
        (sum, record) => sum + (record.countMap.proxy ?? 0),
        0,
      );
      expect(total, interval).toBe(5);
    }
    // A proxy's route: its own requests only, from its region.
    for (const [proxyId, count] of [
      [eu, 2],
      [us, 3],
    ] as const) {
      const own = await owner.api.get(telemetryPath(client, "?interval=day", proxyId));
      expect(own.status).toBe(200);
      expect(own.body.telemetry).toHaveLength(1);
      expect(own.body.telemetry[0]).toMatchObject({ pKey: client, proxyId, countMap: { proxy: count } });
    }
    // The default interval is hour; limit keeps the most recent buckets, oldest first.
    const hours = await owner.api.get(telemetryPath(client));
    expect(hours.body.interval).toBe("hour");
    expect(hours.body.telemetry.at(-1).sKey).toBe(bucketKey("hour", Date.now()));
    const minutes = await owner.api.get(telemetryPath(client, "?interval=minute&limit=1"));
    expect(minutes.body.telemetry).toHaveLength(1);
    const allMinutes = await owner.api.get(telemetryPath(client, "?interval=minute"));
    expect(minutes.body.telemetry[0].sKey).toBe(allMinutes.body.telemetry.at(-1).sKey);
    const keys = (allMinutes.body.telemetry as { sKey: string }[]).map((record) => record.sKey);
    expect(keys).toEqual([...keys].sort());
    // The caller's address is stored on the log for the country lookup, and never answered.
    const listed = await owner.api.get(`/api/clients/${client}/proxies/${eu}/requests`);
    const requestId = listed.body.requests[0].requestId as string;
    const detail = await owner.api.get(`/api/clients/${client}/proxies/${eu}/requests/${requestId}`);
    expect(JSON.stringify([listed.body, detail.body])).not.toContain("sourceIp");
    expect((await storedItem(tableKeys.requestLog(eu, requestId), REGION))?.sourceIp).toMatch(
      /127\.0\.0\.1$/,
    );

    // A range that ends before the run holds nothing.
    const before = await owner.api.get(
      telemetryPath(client, `?interval=day&endDate=${new Date(started - 3 * 86_400_000).toISOString()}`),
    );
    expect(before.body.telemetry).toEqual([]);
  }, 120_000);

  it("refuses a bad interval, limit or date with 400 naming the field, and other organisations' ids", async () => {
    for (const [query, field] of [
      ["?interval=week", "interval"],
      ["?limit=0", "limit"],
      ["?limit=1001", "limit"],
      ["?limit=ten", "limit"],
      ["?startDate=yesterday", "startDate"],
      ["?endDate=2025-13-01T00:00:00Z", "endDate"],
      ["?startDate=2025-02-01T00:00:00Z&endDate=2025-01-01T00:00:00Z", "startDate"],
    ] as const) {
      for (const path of [telemetryPath(clientId, query), telemetryPath(clientId, query, proxies[0])]) {
        const answer = await owner.api.get(path);
        expect(answer.status, path).toBe(400);
        expect(JSON.stringify(answer.body), path).toContain(field);
      }
    }
    expect((await owner.api.get(telemetryPath(clientId, "?limit=1000&interval=minute"))).status).toBe(200);
    const intruder = await stack.newUser();
    const intruderClient = await createClientFor(intruder, "Intruder");
    expect([403, 404]).toContain((await intruder.api.get(telemetryPath(clientId))).status);
    expect([403, 404]).toContain((await intruder.api.get(telemetryPath(clientId, "", proxies[0]))).status);
    // Its own client with the victim's proxy id.
    expect((await intruder.api.get(telemetryPath(intruderClient, "", proxies[0]))).status).toBe(404);
    expect((await stack.anonymous.get(telemetryPath(clientId))).status).toBe(401);
  });
});
