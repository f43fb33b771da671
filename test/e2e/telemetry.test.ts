/**
 * Telemetry over real HTTP (issue 11, "Aggregation"): proxied requests through the local stack's
 * data plane -> request logs in the regional table -> its stream, polled into the telemetry
 * consumer (functions/telemetry-stream.ts) -> telemetry buckets. A mixed run (successes, denials,
 * target errors, two proxies, some requests with CloudFront-Viewer-Country) gives exact counts in
 * every interval, per client and per proxy, within 30 s of the last request; the percentiles are
 * checked against the raw durations of the request logs.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listRequestLogsOfProxy } from "#lib/db/entities/request-log.ts";
import { listTelemetryBuckets } from "#lib/db/entities/telemetry.ts";
import { mergeCounts, type TelemetryCounts } from "#lib/domain/telemetry/aggregate.ts";
import { bucketKey, TELEMETRY_INTERVALS, type TelemetryInterval } from "#lib/domain/telemetry/buckets.ts";
import { exactPercentile, HISTOGRAM_RELATIVE_ERROR } from "#lib/domain/telemetry/histogram.ts";
import { PERCENTILES, telemetryRecordOf } from "#lib/domain/telemetry/read.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  createProxyParts,
  startTestStack,
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
        const country = step.country?.toUpperCase() ?? "XX";
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
