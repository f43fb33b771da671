/**
 * The data plane's service metrics (CloudWatch embedded metric format through Powertools Metrics,
 * `@aws-lambda-powertools/metrics`): one record per proxied request, written after the answer with
 * the request log, never on the caller's wait. Powertools is loaded on demand (its own chunk): the
 * cold start does not carry it (docs/performance.md).
 *
 * Namespace `ProxyGateway`, dimension `Service=data-plane`:
 * - `Requests` (Count), `ServerErrors` (Count: answers with status >= 500, the alarm's numerator),
 *   `MeterRefusals` (Count: 429s decided by a meter), `TransformErrors` (Count), `TargetLatency`
 *   (Milliseconds: sent to the target until its answer, when the target was called);
 * - `RequestsByCode` (Count) with the dimensions `Service` and `Code` (the `service-proxy-code`).
 */
import { METRIC_NAMESPACE } from "#lib/log.ts";
import type { Answer, RequestContext } from "./context.ts";

export const DATA_PLANE_SERVICE = "data-plane";

export const DATA_PLANE_METRICS = {
  requests: "Requests",
  serverErrors: "ServerErrors",
  meterRefusals: "MeterRefusals",
  transformErrors: "TransformErrors",
  targetLatency: "TargetLatency",
  requestsByCode: "RequestsByCode",
} as const;

export interface RequestMetricFacts {
  code: string;
  status: number;
  meterRefused: boolean;
  transformError: boolean;
  /** Sent to the target until its answer, ms; absent when the target was not called. */
  targetLatencyMs?: number;
}

/** What one request contributes to the metrics. */
export function requestMetricFacts(ctx: RequestContext, answer: Answer): RequestMetricFacts {
  const facts: RequestMetricFacts = {
    code: answer.outcome.code,
    status: answer.response.status,
    meterRefused: (ctx.metering?.refused.length ?? 0) > 0,
    transformError: answer.outcome.code === "transform-error",
  };
  if (ctx.target) facts.targetLatencyMs = Math.max(0, ctx.target.receivedAt - ctx.target.sentAt);
  return facts;
}

type PowertoolsMetrics = typeof import("@aws-lambda-powertools/metrics");
let loading: Promise<PowertoolsMetrics> | undefined;

/**
 * Writes the request's metrics (two EMF lines). Silent when LOG_LEVEL is `silent` (tests) or
 * metrics are off (`POWERTOOLS_METRICS_DISABLED=true`, the default of `npm start`).
 */
export async function publishRequestMetrics(facts: RequestMetricFacts): Promise<void> {
  if (process.env.LOG_LEVEL === "silent" || process.env.POWERTOOLS_METRICS_DISABLED === "true") return;
  loading ??= import("@aws-lambda-powertools/metrics");
  const { Metrics, MetricUnit } = await loading;
  const metrics = new Metrics({ namespace: METRIC_NAMESPACE, serviceName: DATA_PLANE_SERVICE });
  const m = DATA_PLANE_METRICS;
  metrics.addMetric(m.requests, MetricUnit.Count, 1);
  metrics.addMetric(m.serverErrors, MetricUnit.Count, facts.status >= 500 ? 1 : 0);
  if (facts.meterRefused) metrics.addMetric(m.meterRefusals, MetricUnit.Count, 1);
  if (facts.transformError) metrics.addMetric(m.transformErrors, MetricUnit.Count, 1);
  if (facts.targetLatencyMs !== undefined)
    metrics.addMetric(m.targetLatency, MetricUnit.Milliseconds, facts.targetLatencyMs);
  const byCode = metrics.singleMetric();
  byCode.addDimension("Code", facts.code);
  byCode.addMetric(m.requestsByCode, MetricUnit.Count, 1);
  metrics.publishStoredMetrics();
}
