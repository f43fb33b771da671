/**
 * The writer behind `lib/log.ts`: Powertools Logger (`@aws-lambda-powertools/logger`) with a
 * formatter that redacts secret-looking keys at any depth before anything is written, and puts the
 * request id in `correlation_id`. Loaded on demand by `lib/log.ts` (`logReady()`): the data plane
 * keeps it out of its cold start and loads it after its first answer.
 */
import { LogFormatter, Logger, LogItem } from "@aws-lambda-powertools/logger";
import type { LogAttributes, UnformattedAttributes } from "@aws-lambda-powertools/logger/types";

/** Keys whose value is a secret whatever it is (matched anywhere in the key, any case). */
const SECRET_KEY =
  /authorization|token|secret|password|passcode|keyvalue|cookie|apikey|api-key|verifier|verificationcode|resetcode|codehash|codesalt/i;
/** Keys that are a secret only as the whole name: a one-time code (`statusCode` is not one). */
const SECRET_EXACT_KEY = /^(code|codes|otp|session|sessionCookie)$/i;
const REDACTED = "[redacted]";

/**
 * Secrets inside a text (a body, a URL, a header line written as one string): a raw user token,
 * the session cookie's value, and JSON fields, query and form parameters named as secrets.
 */
const SECRET_IN_TEXT: Array<[RegExp, string]> = [
  [/\bu-[A-Za-z0-9_-]{43,128}/g, `u-${REDACTED}`],
  [/\b((?:__Host-)?session=)[^;,\s"']+/gi, `$1${REDACTED}`],
  [
    /("(?:password|newPassword|currentPassword|code|token|refresh_token|access_token|code_verifier|client_secret)"\s*:\s*")(?:[^"\\]|\\.)*"/gi,
    `$1${REDACTED}"`,
  ],
  [
    /([?&](?:password|code|token|refresh_token|access_token|code_verifier|client_secret)=)[^&\s"']*/gi,
    `$1${REDACTED}`,
  ],
];

export function redactText(text: string): string {
  let result = text;
  for (const [pattern, replacement] of SECRET_IN_TEXT) result = result.replace(pattern, replacement);
  return result;
}

const isSecretKey = (key: string) => SECRET_KEY.test(key) || SECRET_EXACT_KEY.test(key);

export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return redactText(value);
  if (depth > 6 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([k, v]) => [
      k,
      isSecretKey(k) ? REDACTED : redact(v, depth + 1),
    ]),
  );
}

/** The project's line: level, message, timestamp, service, correlation id, then the fields. */
class RedactingFormatter extends LogFormatter {
  override formatAttributes(attributes: UnformattedAttributes, additional: LogAttributes): LogItem {
    const fields = redact(additional) as LogAttributes;
    const requestId = typeof fields.requestId === "string" ? fields.requestId : undefined;
    const base: LogAttributes = {
      level: attributes.logLevel.toLowerCase(),
      message: redactText(attributes.message),
      timestamp: this.formatTimestamp(attributes.timestamp),
      service: attributes.serviceName,
    };
    const correlationId = requestId ?? fields.correlation_id;
    if (typeof correlationId === "string") base.correlation_id = correlationId;
    const lambda = attributes.lambdaContext;
    if (lambda) {
      base.function_name = lambda.functionName;
      base.function_request_id = lambda.awsRequestId;
      base.cold_start = lambda.coldStart;
    }
    if (attributes.xRayTraceId) base.xray_trace_id = attributes.xRayTraceId;
    return new LogItem({ attributes: base }).addAttributes(fields);
  }
}

export type Level = "debug" | "info" | "warn" | "error";

export interface LogBackend {
  write(level: Level, message: string, fields?: Record<string, unknown>): void;
}

/**
 * Powertools' Logger writes debug and info lines on stdout (warn and error on stderr), as Lambda
 * expects. This one writes every line on stderr, formatted the same: for a command whose stdout is
 * its result (the admin CLI). `printLog` is Powertools' protected extension point for the output.
 */
class StderrLogger extends Logger {
  protected override printLog(_logLevel: number, log: LogItem): void {
    log.prepareForPrint();
    process.stderr.write(`${JSON.stringify(log.getAttributes(), this.getJsonReplacer())}\n`);
  }
}

export function createBackend(options: { stderrOnly?: boolean } = {}): LogBackend {
  const logger = new (options.stderrOnly ? StderrLogger : Logger)({
    serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? "proxy-gateway",
    // The level is decided by lib/log.ts (LOG_LEVEL, read on every call): Powertools writes all.
    logLevel: "DEBUG",
    logFormatter: new RedactingFormatter(),
  });
  return {
    write(level, message, fields) {
      if (fields) logger[level](message, fields);
      else logger[level](message);
    },
  };
}
