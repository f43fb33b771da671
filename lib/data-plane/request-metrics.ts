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
type MetricsObject = InstanceType<PowertoolsMetrics["Metrics"]>;
/**
 * The two Metrics objects of the instance, built once (each publish clears their metrics and
 * dimensions): building them per request cost about 200 µs of CPU (docs/performance.md).
 */
let loading:
  | Promise<{ unit: PowertoolsMetrics["MetricUnit"]; main: MetricsObject; byCode: MetricsObject }>
  | undefined;

function metricsObjects() {
  loading ??= import("@aws-lambda-powertools/metrics").then(({ Metrics, MetricUnit }) => ({
    unit: MetricUnit,
    main: new Metrics({ namespace: METRIC_NAMESPACE, serviceName: DATA_PLANE_SERVICE }),
    byCode: new Metrics({ namespace: METRIC_NAMESPACE, serviceName: DATA_PLANE_SERVICE }),
  }));
  return loading;
}

/**
 * Writes the request's metrics (two EMF lines). Silent when LOG_LEVEL is `silent` (tests) or
 * metrics are off (`POWERTOOLS_METRICS_DISABLED=true`, the default of `npm start`).
 */
export async function publishRequestMetrics(facts: RequestMetricFacts): Promise<void> {
  if (process.env.LOG_LEVEL === "silent" || process.env.POWERTOOLS_METRICS_DISABLED === "true") return;
  const { unit, main, byCode } = await metricsObjects();
  const m = DATA_PLANE_METRICS;
  main.addMetric(m.requests, unit.Count, 1);
  main.addMetric(m.serverErrors, unit.Count, facts.status >= 500 ? 1 : 0);
  if (facts.meterRefused) main.addMetric(m.meterRefusals, unit.Count, 1);
  if (facts.transformError) main.addMetric(m.transformErrors, unit.Count, 1);
  if (facts.targetLatencyMs !== undefined)
    main.addMetric(m.targetLatency, unit.Milliseconds, facts.targetLatencyMs);
  main.publishStoredMetrics();
  byCode.addDimension("Code", facts.code);
  byCode.addMetric(m.requestsByCode, unit.Count, 1);
  byCode.publishStoredMetrics();
}
