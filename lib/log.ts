/**
 * Structured JSON logging through Powertools Logger (lib/log-backend.ts). Values under keys that
 * look secret are replaced before anything is written, and so are secrets inside strings (a raw
 * token, a session cookie, JSON/query/form fields named as secrets), so a careless call cannot put
 * a token, password, code or session in CloudWatch. The request id is the correlation id (`correlation_id`).
 *
 * The writer is loaded on demand so that the data plane's cold start does not carry it
 * (docs/performance.md): a line logged before it is loaded waits in a bounded queue and is written,
 * in order, as soon as it is. `logReady()` loads it; the Core API and stream handlers await it
 * before they run, the data plane after its answer (off the caller's wait).
 */
import type { Level, LogBackend } from "./log-backend.ts";

/** Lines kept while the writer loads; beyond this the oldest are dropped (and counted). */
const QUEUE_LIMIT = 1000;

let backend: LogBackend | undefined;
let loading: Promise<void> | undefined;
let queue: Array<{ level: Level; message: string; fields?: Record<string, unknown>; loggedAt: string }> = [];
let dropped = 0;
let correlationId: string | undefined;
/** Where lines go: Powertools' default (debug and info on stdout, warn and error on stderr), or all on stderr. */
let destination: "default" | "stderr" = "default";

/** Loads the writer (once) and writes what waited for it. */
export function logReady(): Promise<void> {
  loading ??= import("./log-backend.ts").then(
    ({ createBackend }) => {
      const ready = createBackend({ stderrOnly: destination === "stderr" });
      const waiting = queue;
      queue = [];
      if (dropped > 0) ready.write("warn", "Log lines dropped while the logger loaded", { dropped });
      dropped = 0;
      for (const line of waiting)
        ready.write(line.level, line.message, { ...line.fields, loggedAt: line.loggedAt });
      backend = ready;
    },
    (error: unknown) => {
      loading = undefined;
      process.stderr.write(
        `${JSON.stringify({ level: "error", message: "Logger failed to load", error: String(error) })}\n`,
      );
    },
  );
  return loading;
}

/** Settles when the lines logged so far are written (at once when nothing waits for the writer). */
export function logSettled(): Promise<void> {
  return backend || !loading ? Promise.resolve() : loading;
}

/**
 * Every line on stderr, whatever its level: for a command whose stdout is its result (the admin
 * CLI prints one JSON document there). Call it before the first line is logged.
 */
export function logToStderr(): void {
  if (destination === "stderr") return;
  destination = "stderr";
  // A writer already loaded writes to Powertools' default streams: the next line loads another.
  if (backend) {
    backend = undefined;
    loading = undefined;
  }
}

const SEVERITY: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/**
 * `LOG_LEVEL`, read on every call: `debug`, `info` (the default, also for an unknown value),
 * `warn`, `error`, or `silent`. A line is written when its level is at or above it.
 */
function enabled(level: Level): boolean {
  const configured = process.env.LOG_LEVEL?.toLowerCase();
  if (configured === "silent") return false;
  const threshold = configured && configured in SEVERITY ? SEVERITY[configured as Level] : SEVERITY.info;
  return SEVERITY[level] >= threshold;
}

function write(level: Level, message: string, given?: Record<string, unknown>) {
  if (!enabled(level)) return;
  const fields = correlationId && !given?.requestId ? { ...given, correlation_id: correlationId } : given;
  if (backend) {
    backend.write(level, message, fields);
    return;
  }
  if (queue.length >= QUEUE_LIMIT) {
    queue.shift();
    dropped++;
  }
  queue.push({ level, message, fields, loggedAt: new Date().toISOString() });
  void logReady();
}

export const log = {
  debug: (message: string, fields?: Record<string, unknown>) => write("debug", message, fields),
  info: (message: string, fields?: Record<string, unknown>) => write("info", message, fields),
  warn: (message: string, fields?: Record<string, unknown>) => write("warn", message, fields),
  error: (message: string, fields?: Record<string, unknown>) => write("error", message, fields),
};

/**
 * The correlation id of the lines logged without a `requestId` field until the next call (one
 * invocation at a time in a Lambda instance): the API handlers set the API request's id.
 */
export function setCorrelationId(id: string | undefined): void {
  correlationId = id;
}

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
