/**
 * Structured JSON logging. Values under keys that look secret are replaced before anything is
 * written, so a careless call cannot put a token or password in CloudWatch.
 */
const SECRET_KEY = /authorization|token|secret|password|keyvalue|cookie|apikey|api-key/i;
const REDACTED = "[redacted]";

function redact(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([k, v]) => [
      k,
      SECRET_KEY.test(k) ? REDACTED : redact(v, depth + 1),
    ]),
  );
}

function write(
  level: "debug" | "info" | "warn" | "error",
  message: string,
  fields?: Record<string, unknown>,
) {
  if (level === "debug" && process.env.LOG_LEVEL !== "debug") return;
  if (process.env.LOG_LEVEL === "silent") return;
  const line = JSON.stringify({
    level,
    message,
    time: new Date().toISOString(),
    ...(redact(fields) as object),
  });
  if (level === "error" || level === "warn") process.stderr.write(`${line}\n`);
  else process.stdout.write(`${line}\n`);
}

export const log = {
  debug: (message: string, fields?: Record<string, unknown>) => write("debug", message, fields),
  info: (message: string, fields?: Record<string, unknown>) => write("info", message, fields),
  warn: (message: string, fields?: Record<string, unknown>) => write("warn", message, fields),
  error: (message: string, fields?: Record<string, unknown>) => write("error", message, fields),
};

export function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof Error)
    return { errorName: error.name, errorMessage: error.message, stack: error.stack };
  return { errorMessage: String(error) };
}

/** Namespace of the service's own CloudWatch metrics, written as embedded metric format (EMF). */
export const METRIC_NAMESPACE = "ProxyGateway";
/** Metrics with an alarm on them (cdk/stacks/regional-stack.ts). */
export const ALARMED_METRICS = {
  /** A proxied request was answered but its request log could not be written. */
  requestLogWriteFailures: "RequestLogWriteFailures",
} as const;

/**
 * Fields that make a log line also count `value` in a CloudWatch metric (EMF): CloudWatch Logs
 * extracts the metric from the line itself, no API call is made. Spread them into a log call.
 */
export function metricFields(metricName: string, service: string, value = 1): Record<string, unknown> {
  return {
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [
        {
          Namespace: METRIC_NAMESPACE,
          Dimensions: [["Service"]],
          Metrics: [{ Name: metricName, Unit: "Count" }],
        },
      ],
    },
    Service: service,
    [metricName]: value,
  };
}
