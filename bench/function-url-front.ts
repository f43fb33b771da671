/**
 * Pure helpers of the bundled-handler bench (bench/bundled.ts), kept free of project imports so
 * the child program (bench/lambda-child.ts, built with esbuild) carries nothing but them:
 * - `functionUrlEvent`: an HTTP request as the Lambda function URL event (payload format 2.0) that
 *   AWS hands the data plane's handler;
 * - `attributeCalls`: store calls seen by the keep-alive front, split by the child's invocation
 *   marks into before the answer, after it (same invocation) and outside any invocation.
 * Unit test: test/unit/bench-helpers.test.ts.
 */
import type { APIGatewayProxyEventV2 } from "aws-lambda";

export interface HttpRequestFacts {
  method: string;
  /** The request target as sent (`/path?query`). */
  url: string;
  /** Node's `req.rawHeaders`: name, value, name, value... */
  rawHeaders: string[];
  body: Buffer;
  sourceIp: string;
  httpVersion: string;
  apiId: string;
  requestId: string;
  /** ms since the epoch */
  now: number;
}

/**
 * The function URL event of a request, as AWS builds it: header names lower-cased, repeated
 * headers joined with commas, cookies apart, the body base64 when present, the raw path and query
 * as sent (fragment removed).
 */
export function functionUrlEvent(request: HttpRequestFacts): APIGatewayProxyEventV2 {
  const target = request.url.split("#", 1)[0] ?? "";
  const mark = target.indexOf("?");
  const rawPath = mark === -1 ? target : target.slice(0, mark);
  const rawQueryString = mark === -1 ? "" : target.slice(mark + 1);
  const headers: Record<string, string> = Object.create(null);
  const cookies: string[] = [];
  for (let i = 0; i + 1 < request.rawHeaders.length; i += 2) {
    const name = request.rawHeaders[i]!.toLowerCase();
    const value = request.rawHeaders[i + 1]!;
    if (name === "cookie") cookies.push(...value.split(/;\s*/).filter(Boolean));
    else headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
  }
  const hasBody = request.body.length > 0;
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath,
    rawQueryString,
    ...(cookies.length ? { cookies } : {}),
    headers,
    ...(hasBody ? { body: request.body.toString("base64") } : {}),
    isBase64Encoded: hasBody,
    requestContext: {
      accountId: "123456789012",
      apiId: request.apiId,
      domainName: headers.host ?? "127.0.0.1",
      domainPrefix: request.apiId,
      http: {
        method: request.method,
        path: rawPath,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.sourceIp.replace(/^::ffff:/, ""),
        userAgent: headers["user-agent"] ?? "",
      },
      requestId: request.requestId,
      routeKey: "$default",
      stage: "$default",
      time: new Date(request.now).toISOString(),
      timeEpoch: request.now,
    },
  };
}

/** A store call as the keep-alive front saw it: operation (X-Amz-Target's last part), arrival time (µs, CLOCK_MONOTONIC). */
export type StoreCall = [operation: string, atUs: number];
/** An invocation as the child saw it (µs, CLOCK_MONOTONIC): start, answer sent, handler resolved. */
export type Invocation = [startUs: number, answeredUs: number, endUs: number];

export interface CallsAroundAnswer {
  invocations: number;
  /** Calls per operation, summed over the invocations. */
  before: Map<string, number>;
  after: Map<string, number>;
  /** Calls outside any invocation (timers, give-backs while idle). */
  outside: Map<string, number>;
}

/** `DynamoDB_20120810.GetItem` → `GetItem`, `TrentService.Decrypt` → `kms:Decrypt`. */
export function operationOf(target: string | undefined, method: string): string {
  if (!target) return `${method} (no X-Amz-Target)`;
  const [service, operation] = target.split(".", 2);
  if (!operation) return target;
  return service?.startsWith("DynamoDB")
    ? operation
    : `${service === "TrentService" ? "kms" : service}:${operation}`;
}

/**
 * Attribute each call to the invocation whose [start, end] holds its arrival: before the answer
 * when it arrived before the answer was sent, after it otherwise. Invocations must not overlap
 * (the child serves one at a time, as a Lambda instance does). A call the handler awaits before
 * answering arrives before the answer by construction; one it makes after the answer arrives
 * after; so the split needs no tolerance.
 */
export function attributeCalls(calls: StoreCall[], invocations: Invocation[]): CallsAroundAnswer {
  const sorted = [...invocations].sort((a, b) => a[0] - b[0]);
  const result: CallsAroundAnswer = {
    invocations: sorted.length,
    before: new Map(),
    after: new Map(),
    outside: new Map(),
  };
  const add = (map: Map<string, number>, operation: string) =>
    map.set(operation, (map.get(operation) ?? 0) + 1);
  for (const [operation, at] of calls) {
    // The last invocation that started at or before the call (binary search).
    let low = 0;
    let high = sorted.length - 1;
    let found = -1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      if (sorted[mid]![0] <= at) {
        found = mid;
        low = mid + 1;
      } else high = mid - 1;
    }
    const invocation = found === -1 ? undefined : sorted[found];
    if (!invocation || at > invocation[2]) add(result.outside, operation);
    else add(at <= invocation[1] ? result.before : result.after, operation);
  }
  return result;
}

/** `GetItem 1.00, PutItem 1.00` per invocation, or `none`. */
export function perInvocation(map: Map<string, number>, invocations: number): string {
  if (map.size === 0 || invocations === 0) return "none";
  return [...map]
    .sort((a, b) => a[0].localeCompare(b[0]))
    .map(([operation, count]) => `${operation} ${(count / invocations).toFixed(2)}`)
    .join(", ");
}

export const totalOf = (map: Map<string, number>) => [...map.values()].reduce((a, b) => a + b, 0);
