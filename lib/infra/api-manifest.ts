/**
 * The Core API's route manifest: every REST route and the Lambda function (resource group) that
 * serves it. The CDK stack generates the API Gateway OpenAPI body from it, and the local runner
 * routes HTTP requests with it, so the two cannot disagree about which handler serves a path.
 */
export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface FunctionGroup {
  /** kebab-case name; the entry point is functions/<name>.ts exporting `handler`. */
  name: string;
  /**
   * Table access this group needs: the home region's table only, every region's table too, or
   * none at all (the API's own documentation).
   */
  tables:
    | "none"
    | "home-read"
    | "home-write"
    | "all-regions-read"
    | "all-regions-write"
    /** Read every region's table (Query), write only the home table (the meter digest). */
    | "all-regions-read-home-write";
  /** Whether the group sends e-mail through SES. */
  sendsEmail?: boolean;
  /** Whether the group talks to the payment processor. */
  usesPayments?: boolean;
  /** Whether the group encrypts or decrypts secrets with each region's KMS key. */
  usesKms?: boolean;
  /** Whether the group calls user-supplied URLs (credential tests, OAuth2 token endpoints). */
  callsOut?: boolean;
  /**
   * Files of installed npm packages the group reads at run time (`<package>/<path>`), copied beside
   * its bundle when the function is built (esbuild bundles code, not the files code reads).
   */
  packageFiles?: readonly string[];
}

/** The reference page's renderer: Redoc's standalone browser bundle, served by the docs group. */
export const REFERENCE_PAGE_BUNDLE = "redoc/bundles/redoc.standalone.js";

export const FUNCTION_GROUPS = {
  clients: { name: "clients", tables: "all-regions-write", usesPayments: true },
  members: { name: "members", tables: "home-write" },
  invites: { name: "invites", tables: "home-write", sendsEmail: true },
  users: { name: "users", tables: "all-regions-write" },
  notifications: { name: "notifications", tables: "home-write" },
  credentials: { name: "credentials", tables: "all-regions-write", usesKms: true, callsOut: true },
  targets: { name: "targets", tables: "all-regions-write" },
  proxies: { name: "proxies", tables: "all-regions-write" },
  rules: { name: "rules", tables: "all-regions-write" },
  meters: { name: "meters", tables: "all-regions-write" },
  transforms: { name: "transforms", tables: "all-regions-write" },
  requests: { name: "requests", tables: "all-regions-read" },
  telemetry: { name: "telemetry", tables: "all-regions-read" },
  /** The MSP API (issue 12): creates clients (payment customers, every region's runtime item), invites by e-mail. */
  msps: { name: "msps", tables: "all-regions-write", sendsEmail: true, usesPayments: true },
  /**
   * Public webhooks: the OAuth2 redirect (KMS: the secret), Stripe events (every region's runtime
   * item, owners e-mailed; the processor's API for an MSP's payment method and a replaced
   * subscription's cancellation).
   */
  webhooks: {
    name: "webhooks",
    tables: "all-regions-write",
    usesKms: true,
    callsOut: true,
    sendsEmail: true,
    usesPayments: true,
  },
  /** Accounts (docs/accounts.md): sign-up, verification, sessions, password reset; public routes, sends e-mail. */
  auth: { name: "auth", tables: "home-write", sendsEmail: true },
  /** The OpenAPI document and the API reference page, derived from the registry; no table. */
  docs: { name: "docs", tables: "none", packageFiles: [REFERENCE_PAGE_BUNDLE] },
} as const satisfies Record<string, FunctionGroup>;

export type FunctionGroupName = keyof typeof FUNCTION_GROUPS;

/** Table access as (home table, every other region's table), each 0 none, 1 read, 2 write. */
const TABLE_ACCESS: Record<FunctionGroup["tables"], readonly [home: number, others: number]> = {
  none: [0, 0],
  "home-read": [1, 0],
  "home-write": [2, 0],
  "all-regions-read": [1, 1],
  "all-regions-write": [2, 2],
  "all-regions-read-home-write": [2, 1],
};

/**
 * What one function needs to run the handlers of every given group in-process: the widest table
 * access of each table (home, others), and e-mail, payments, KMS and call-outs when any group has
 * them. Package files are bundling, not grants: they are not merged.
 */
export function unionOfGroups(name: string, groups: readonly FunctionGroup[]): FunctionGroup {
  const home = Math.max(0, ...groups.map((group) => TABLE_ACCESS[group.tables][0]));
  const others = Math.max(0, ...groups.map((group) => TABLE_ACCESS[group.tables][1]));
  const tables = (Object.keys(TABLE_ACCESS) as FunctionGroup["tables"][]).find(
    (key) => TABLE_ACCESS[key][0] === home && TABLE_ACCESS[key][1] === others,
  );
  // Every level has home >= others, so their maxima are a level too; kept as a guard.
  if (!tables) throw new Error(`${name}: no table access covers home ${home}, other regions ${others}`);
  return {
    name,
    tables,
    sendsEmail: groups.some((group) => group.sendsEmail === true),
    usesPayments: groups.some((group) => group.usesPayments === true),
    usesKms: groups.some((group) => group.usesKms === true),
    callsOut: groups.some((group) => group.callsOut === true),
  };
}

/**
 * The MCP endpoint (issue 13, functions/mcp.ts behind a Lambda function URL): its tools run every
 * Core API operation in-process through the same handlers, so it gets exactly the union of what
 * the route groups get, derived here and nowhere else. Beyond that it signs OAuth access tokens
 * with its own asymmetric key (cdk/stacks/home-stack.ts).
 */
export const MCP_FUNCTION: FunctionGroup = unionOfGroups("mcp", Object.values(FUNCTION_GROUPS));

/**
 * The body message of every Core API 503: the store (or another AWS service) did not answer in
 * time. The handlers answer it (lib/http/api-handler.ts), and so does the API itself when the
 * authorizer fails (a gateway response, cdk/constructs/core-api-definition.ts; locally local/api-gateway.ts).
 */
export const SERVICE_UNAVAILABLE_MESSAGE = "The service is temporarily unavailable; try again shortly";

/**
 * The body message of every Core API 401 (spec 5.1: the raw user token, not `Bearer <token>`; or a
 * signed-in browser's session cookie, issue 21). API Gateway's Lambda authorizer cannot shape a
 * 401 per request (it throws "Unauthorized", and a gateway response template is static), so one
 * message serves a missing, an invalid and a `Bearer`-prefixed token, and a missing or expired
 * session, alike, and says how to authenticate: the UNAUTHORIZED gateway response
 * (cdk/constructs/core-api-definition.ts) and, locally, local/api-gateway.ts answer it.
 */
export const UNAUTHORIZED_MESSAGE =
  "Unauthorized: missing or invalid token or session. Send the user API token in the Authorization header as it is, without the Bearer prefix, or sign in (POST /auth/sign-in) and send the session cookie";

/**
 * The items every authenticated Core API request writes in the home table, whatever its group's
 * table access (lib/api/dispatch.ts): its rate window (`RATE#<principal>`) and, at most once a
 * minute, its token's last use (`TOKEN#<hash>`: the MCP endpoint stamps it, in the union of the
 * groups' grants). A group whose home access is read-only is granted UpdateItem on items under
 * exactly these partition key prefixes (cdk/stacks/home-stack.ts).
 */
export const REQUEST_ACCOUNTING_KEY_PREFIXES = ["RATE#", "TOKEN#"] as const;

/**
 * What the Core API authorizer writes in the home table (lib/domain/authorizer.ts), beside its
 * reads: a token's last use (`TOKEN#<hash>`, at most once a minute) and a session's idle expiry
 * (`USER#<userId>` / `SESSION#<hash>`, at most once a minute). `dynamodb:LeadingKeys` scopes a
 * grant by partition key only, so the session's grant covers the `USER#` partitions, narrowed to
 * the two attributes a touch sets (`dynamodb:Attributes`, fine-grained access control;
 * cdk/stacks/home-stack.ts). Both writes are best effort: a refused one never fails the request.
 */
export const AUTHORIZER_UPDATES = {
  /** Any attribute of items under these partition key prefixes. */
  items: ["TOKEN#"],
  /** Only these attributes (besides the key) of items under `USER#`. */
  sessionTouch: { prefixes: ["USER#"], attributes: ["lastSeenAt", "idleExpiresAt"] },
} as const;

/** Functions that are not behind a route. */
export const AUTHORIZER_FUNCTION = {
  name: "authorizer",
  tables: "home-read",
} as const satisfies FunctionGroup;
export interface ScheduledFunction extends FunctionGroup {
  /** The EventBridge schedule; the local runner runs the function on it (with no input). */
  schedule: string;
  /**
   * In AWS, one rule per entry instead of `schedule`: its expression and the input it passes
   * (the event's time is added as `time`). Locally, `schedule` alone runs it.
   */
  schedules?: Readonly<Record<string, { expression: string; input: Readonly<Record<string, string>> }>>;
}

export const SCHEDULED_FUNCTIONS = {
  /** Purges clients and users whose deletion grace period has ended. */
  accountPurge: { name: "account-purge", tables: "all-regions-write", schedule: "rate(1 hour)" },
  /**
   * Meter alert digests (docs/meters.md): one rule per cadence, shortly after each period ends;
   * locally every minute for all cadences. Reads the occurrences in every region, writes the
   * notifications (and its progress) in the home table, sends e-mail.
   */
  meterDigest: {
    name: "meter-digest",
    tables: "all-regions-read-home-write",
    sendsEmail: true,
    schedule: "rate(1 minute)",
    schedules: {
      Minute: { expression: "rate(1 minute)", input: { cadence: "minute" } },
      Hour: { expression: "cron(2 * * * ? *)", input: { cadence: "hour" } },
      Day: { expression: "cron(5 0 * * ? *)", input: { cadence: "day" } },
      Month: { expression: "cron(10 0 1 * ? *)", input: { cadence: "month" } },
    },
  },
} as const satisfies Record<string, ScheduledFunction>;

export interface RouteDefinition {
  method: HttpMethod;
  /** API Gateway resource path with `{param}` placeholders. */
  path: string;
  group: FunctionGroupName;
  /** No authorizer (the OAuth2 redirect of a provider carries no user token); the handler checks what it needs. */
  public?: boolean;
}
