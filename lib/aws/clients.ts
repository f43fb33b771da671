/**
 * AWS SDK clients, one per service and region, created once per process (module scope) and reused
 * by every invocation. The endpoint comes from the SDK's own AWS_ENDPOINT_URL support, so the same
 * code talks to AWS, moto or LocalStack.
 *
 * Every call is bounded (docs/architecture.md, "Store timeouts"): a store that stalls fails the
 * call after `attempts x requestTimeout` (plus a short back-off) instead of holding the request
 * until the Lambda timeout. The defaults fit the data plane's budget: a 60 s target plus the calls
 * after it (single-use deletion, the request log) inside the 75 s Lambda timeout, and a Core API
 * answer well inside API Gateway's 29 s.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { KMSClient } from "@aws-sdk/client-kms";
import { SESv2Client } from "@aws-sdk/client-sesv2";
import { type DocumentClient, documentClient } from "./document-client.ts";

/** Defaults of the bounds; each can be overridden by the environment variable named beside it. */
export const SDK_TIMEOUT_DEFAULTS = {
  /** TCP connect (SDK_CONNECT_TIMEOUT_MS). In-region connects take milliseconds. */
  connectTimeoutMs: 1000,
  /** Request sent to response head, and the longest silence while reading the body (SDK_REQUEST_TIMEOUT_MS). */
  requestTimeoutMs: 2000,
  /** Attempts per call, the first included (SDK_MAX_ATTEMPTS): one retry after a timeout or throttle. */
  maxAttempts: 2,
} as const;

/**
 * The connect and request timeouts the local stack and the tests use unless SDK_CONNECT_TIMEOUT_MS
 * / SDK_REQUEST_TIMEOUT_MS are set. Locally one process serves every request at once and the
 * emulator answers one call at a time, so a burst queues for seconds (for a pooled socket, which
 * the SDK counts in the connect timeout, then in the emulator), which in AWS would be a stall but
 * locally is only a queue.
 */
export const EMULATOR_TIMEOUT_MS = 10_000;

/** The environment overrides of the local stack and the tests (the runner and test setup apply them). */
export const EMULATOR_TIMEOUT_ENV = {
  SDK_CONNECT_TIMEOUT_MS: String(EMULATOR_TIMEOUT_MS),
  SDK_REQUEST_TIMEOUT_MS: String(EMULATOR_TIMEOUT_MS),
} as const;

function envNumber(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new Error(`Invalid configuration: ${name} must be a whole number from ${min} to ${max}`);
  return value;
}

/** The client options that bound every call (read when a client is created). */
export function sdkCallBounds() {
  const requestTimeout = envNumber(
    "SDK_REQUEST_TIMEOUT_MS",
    SDK_TIMEOUT_DEFAULTS.requestTimeoutMs,
    50,
    60_000,
  );
  return {
    maxAttempts: envNumber("SDK_MAX_ATTEMPTS", SDK_TIMEOUT_DEFAULTS.maxAttempts, 1, 5),
    requestHandler: {
      connectionTimeout: envNumber(
        "SDK_CONNECT_TIMEOUT_MS",
        SDK_TIMEOUT_DEFAULTS.connectTimeoutMs,
        50,
        60_000,
      ),
      // Without throwOnRequestTimeout the SDK only warns when requestTimeout passes.
      requestTimeout,
      throwOnRequestTimeout: true,
      // A response whose body stops arriving (the request timeout ends at the response head).
      socketTimeout: requestTimeout,
    },
  };
}

/**
 * Fixed answers to settings the SDK otherwise asks a config provider for on every call (endpoint
 * parameters), read once from the environment variables the SDK itself would read.
 */
export function fixedEndpointSettings() {
  return {
    useFipsEndpoint: process.env.AWS_USE_FIPS_ENDPOINT === "true",
    useDualstackEndpoint: process.env.AWS_USE_DUALSTACK_ENDPOINT === "true",
  };
}

/**
 * Middleware the gateway never needs, removed from each client to save CPU on every call
 * (docs/performance.md): the logger middleware builds a filtered copy of each input and output
 * for the SDK's no-op logger (we pass no logger), and the user-agent middleware rebuilds and
 * escapes the user-agent strings per call.
 */
export const REMOVED_MIDDLEWARE = ["loggerMiddleware", "getUserAgentMiddleware"] as const;

function lean<T extends { middlewareStack: { remove(name: string): boolean } }>(client: T): T {
  for (const name of REMOVED_MIDDLEWARE) client.middlewareStack.remove(name);
  return client;
}

/**
 * `SDK_CACHE_MIDDLEWARE=true`: the client resolves each command class's middleware stack once and
 * reuses it (the SDK's `cacheMiddleware`), instead of per call: about 90 µs of CPU less per call
 * (docs/performance.md). Not set by any stack: the cached handler keeps the execution context of
 * its first call (`commandInstance` included) for every later and concurrent call, which no test
 * here proves harmless; and tests that add middleware to live clients would not see it.
 */
export function cachedMiddleware(): { cacheMiddleware?: true } {
  return process.env.SDK_CACHE_MIDDLEWARE === "true" ? { cacheMiddleware: true } : {};
}

const NETWORK_ERROR_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENETUNREACH",
  "EHOSTUNREACH",
]);
/** Error names of AWS services meaning "busy or failing, try again", not "your request is wrong". */
const UNAVAILABLE_ERROR_NAMES = new Set([
  "TimeoutError",
  // DynamoDB: a write kept losing to concurrent transactions on the same items (lib/data-plane/counters.ts).
  "TransactionConflictException",
  "ProvisionedThroughputExceededException",
  "RequestLimitExceeded",
  "ThrottlingException",
  "TooManyRequestsException",
  "InternalServerError",
  "ServiceUnavailable",
  "LimitExceededException",
  "KMSInternalException",
  "DependencyTimeoutException",
  "KeyUnavailableException",
]);

/**
 * Whether an error means an AWS service (the store, KMS, SES) could not be reached or answered in
 * time, after the client's retries: the caller gets a 503 (try again), not a 500 (a defect).
 */
export function isServiceUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (UNAVAILABLE_ERROR_NAMES.has(error.name)) return true;
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== undefined && NETWORK_ERROR_CODES.has(code)) return true;
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return status !== undefined && (status >= 500 || status === 429);
}

const documentClients = new Map<string, DocumentClient>();
const kmsClients = new Map<string, Promise<KMSClient>>();
const sesClients = new Map<string, SESv2Client>();

export function dynamo(region: string): DocumentClient {
  let client = documentClients.get(region);
  if (!client) {
    // Our document client: any key name of a stored map is data (see lib/aws/document-client.ts).
    client = documentClient(
      lean(
        new DynamoDBClient({
          region,
          ...sdkCallBounds(),
          ...fixedEndpointSettings(),
          // Neither is used by the gateway; fixed here, the SDK does not resolve them per call.
          endpointDiscoveryEnabled: false,
          accountIdEndpointMode: "disabled",
          ...cachedMiddleware(),
        }),
      ),
    );
    documentClients.set(region, client);
  }
  return client;
}

/**
 * The region's KMS client. Async: @aws-sdk/client-kms is loaded on first use, so a data-plane cold
 * start does not read it (a warm data plane calls KMS once per credential per data-key TTL).
 */
export function kms(region: string): Promise<KMSClient> {
  let client = kmsClients.get(region);
  if (!client) {
    const bounds = sdkCallBounds();
    client = import("./kms-client.ts").then(({ KMSClient }) =>
      lean(new KMSClient({ region, ...bounds, ...fixedEndpointSettings() })),
    );
    kmsClients.set(region, client);
  }
  return client;
}

export function ses(region: string): SESv2Client {
  let client = sesClients.get(region);
  if (!client) {
    client = lean(new SESv2Client({ region, ...sdkCallBounds(), ...fixedEndpointSettings() }));
    sesClients.set(region, client);
  }
  return client;
}

/** Drop cached clients (tests and the local runner switch endpoints between runs). */
export function resetClients(): void {
  for (const client of documentClients.values()) client.destroy();
  for (const client of kmsClients.values()) void client.then((created) => created.destroy());
  for (const client of sesClients.values()) client.destroy();
  documentClients.clear();
  kmsClients.clear();
  sesClients.clear();
}
