/**
 * The data plane's service metrics (lib/data-plane/request-metrics.ts): what a request contributes,
 * and the embedded-metric-format lines Powertools Metrics writes for it (parsed back here, as
 * CloudWatch Logs would extract them).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { newContext, serviceAnswer } from "#lib/data-plane/context.ts";
import {
  DATA_PLANE_METRICS,
  publishRequestMetrics,
  requestMetricFacts,
} from "#lib/data-plane/request-metrics.ts";
import { METRIC_NAMESPACE } from "#lib/log.ts";
import { request } from "./stages/fixtures.ts";

const savedLevel = process.env.LOG_LEVEL;
let stdout: string[];

beforeEach(() => {
  stdout = [];
  process.env.LOG_LEVEL = "info";
  vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    stdout.push(String(chunk));
    return true;
  });
});

afterEach(() => {
  vi.restoreAllMocks();
  if (savedLevel === undefined) delete process.env.LOG_LEVEL;
  else process.env.LOG_LEVEL = savedLevel;
});

const emf = () =>
  stdout.flatMap((chunk) => chunk.split("\n").filter(Boolean)).map((line) => JSON.parse(line));

describe("requestMetricFacts", () => {
  it("takes the code, the status, the meter refusal, the transform error and the target latency", () => {
    const ctx = newContext(request(), "req-1", 1_000);
    ctx.target = { sentAt: 1_010, receivedAt: 1_052, status: 200, location: null, headers: {} };
    const ok = serviceAnswer(200, { code: "proxy-access-granted", message: "ok" });
    expect(requestMetricFacts(ctx, ok)).toEqual({
      code: "proxy-access-granted",
      status: 200,
      meterRefused: false,
      transformError: false,
      targetLatencyMs: 42,
    });

    const refused = newContext(request(), "req-2", 1_000);
    refused.metering = { applied: ["m1"], refused: [{ meterId: "m1", window: "minute" }] };
    expect(
      requestMetricFacts(refused, serviceAnswer(429, { code: "proxy-rate-limited", message: "no" })),
    ).toEqual({ code: "proxy-rate-limited", status: 429, meterRefused: true, transformError: false });

    const failed = newContext(request(), "req-3", 1_000);
    expect(
      requestMetricFacts(failed, serviceAnswer(500, { code: "transform-error", message: "boom" })),
    ).toMatchObject({ status: 500, transformError: true });
  });
});

describe("publishRequestMetrics", () => {
  it("writes the request's metrics in the service namespace, and a count by code", async () => {
    await publishRequestMetrics({
      code: "proxy-access-granted",
      status: 502,
      meterRefused: true,
      transformError: true,
      targetLatencyMs: 42,
    });
    const records = emf();
    expect(records).toHaveLength(2);
    const byName = (name: string) =>
      records.find((r) => r._aws.CloudWatchMetrics[0].Metrics.some((m: { Name: string }) => m.Name === name));
    const main = byName(DATA_PLANE_METRICS.requests);
    expect(main._aws.CloudWatchMetrics[0]).toMatchObject({
      Namespace: METRIC_NAMESPACE,
      Dimensions: [["service"]],
    });
    expect(main).toMatchObject({
      service: "data-plane",
      Requests: 1,
      ServerErrors: 1,
      MeterRefusals: 1,
      TransformErrors: 1,
      TargetLatency: 42,
    });
    const units = Object.fromEntries(
      main._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string; Unit: string }) => [m.Name, m.Unit]),
    );
    expect(units).toMatchObject({ Requests: "Count", TargetLatency: "Milliseconds" });
    const byCode = byName(DATA_PLANE_METRICS.requestsByCode);
    expect(byCode._aws.CloudWatchMetrics[0].Dimensions[0]).toEqual(
      expect.arrayContaining(["service", "Code"]),
    );
    expect(byCode).toMatchObject({ Code: "proxy-access-granted", RequestsByCode: 1, service: "data-plane" });
  });

  it("a success that never reached a meter or a transform: no refusal or error metric, ServerErrors 0", async () => {
    await publishRequestMetrics({
      code: "proxy-access-granted",
      status: 200,
      meterRefused: false,
      transformError: false,
    });
    const main = emf().find((r) => "Requests" in r);
    expect(main).toMatchObject({ Requests: 1, ServerErrors: 0 });
    expect(main).not.toHaveProperty("MeterRefusals");
    expect(main).not.toHaveProperty("TransformErrors");
    expect(main).not.toHaveProperty("TargetLatency");
  });

  it("reuses its Metrics objects: each request's lines carry only that request's metrics and code", async () => {
    await publishRequestMetrics({
      code: "meter-limit-exceeded",
      status: 429,
      meterRefused: true,
      transformError: false,
    });
    await publishRequestMetrics({
      code: "proxy-access-granted",
      status: 200,
      meterRefused: false,
      transformError: false,
    });
    const records = emf();
    expect(records).toHaveLength(4);
    const [firstMain, firstCode, secondMain, secondCode] = records;
    expect(firstMain).toMatchObject({ Requests: 1, MeterRefusals: 1 });
    expect(firstCode).toMatchObject({ Code: "meter-limit-exceeded", RequestsByCode: 1 });
    expect(secondMain).toMatchObject({ Requests: 1, ServerErrors: 0 });
    expect(secondMain).not.toHaveProperty("MeterRefusals");
    expect(secondCode).toMatchObject({ Code: "proxy-access-granted", RequestsByCode: 1 });
    expect(secondCode._aws.CloudWatchMetrics[0].Metrics).toEqual([{ Name: "RequestsByCode", Unit: "Count" }]);
  });

  it("writes nothing when logging is silent (the test suites)", async () => {
    process.env.LOG_LEVEL = "silent";
    await publishRequestMetrics({ code: "x", status: 200, meterRefused: false, transformError: false });
    expect(stdout).toEqual([]);
  });
});
