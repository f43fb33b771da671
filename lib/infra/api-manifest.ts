/**
 * The Core API's route manifest: every REST route and the Lambda function (resource group) that
 * serves it. The CDK stack creates API Gateway resources and methods from it, and the local runner
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
  tables: "none" | "home-read" | "home-write" | "all-regions-read" | "all-regions-write";
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
  requests: { name: "requests", tables: "all-regions-read" },
  webhooks: { name: "webhooks", tables: "all-regions-write", usesKms: true, callsOut: true },
  /** The OpenAPI document and the API reference page, derived from the registry; no table. */
  docs: { name: "docs", tables: "none", packageFiles: [REFERENCE_PAGE_BUNDLE] },
} as const satisfies Record<string, FunctionGroup>;

export type FunctionGroupName = keyof typeof FUNCTION_GROUPS;

/**
 * The body message of every Core API 503: the store (or another AWS service) did not answer in
 * time. The handlers answer it (lib/http/api-handler.ts), and so does the API itself when the
 * authorizer fails (a gateway response, cdk/stacks/home-stack.ts; locally local/api-gateway.ts).
 */
export const SERVICE_UNAVAILABLE_MESSAGE = "The service is temporarily unavailable; try again shortly";

/** Functions that are not behind a route. */
export const AUTHORIZER_FUNCTION = {
  name: "authorizer",
  tables: "home-read",
} as const satisfies FunctionGroup;
export const SCHEDULED_FUNCTIONS = {
  /** Purges clients and users whose deletion grace period has ended. */
  accountPurge: { name: "account-purge", tables: "all-regions-write", schedule: "rate(1 hour)" },
} as const;

export interface RouteDefinition {
  method: HttpMethod;
  /** API Gateway resource path with `{param}` placeholders. */
  path: string;
  group: FunctionGroupName;
  /** No authorizer (the OAuth2 redirect of a provider carries no user token); the handler checks what it needs. */
  public?: boolean;
}

const route = (
  method: HttpMethod,
  path: string,
  group: FunctionGroupName,
  options: { public?: boolean } = {},
): RouteDefinition => ({
  method,
  path,
  group,
  ...(options.public ? { public: true } : {}),
});

/** Routes of the groups not yet declared in the operation registry (lib/api/routes.ts merges them). */
export const LEGACY_ROUTES: readonly RouteDefinition[] = [
  // 4.1 Clients
  route("GET", "/api/clients", "clients"),
  route("POST", "/api/clients", "clients"),
  route("GET", "/api/clients/{clientId}", "clients"),
  route("PUT", "/api/clients/{clientId}", "clients"),
  route("DELETE", "/api/clients/{clientId}", "clients"),
  // 4.2 Members and memberships
  route("GET", "/api/clients/{clientId}/members", "members"),
  route("POST", "/api/clients/{clientId}/members", "members"),
  route("GET", "/api/clients/{clientId}/members/{userId}", "members"),
  route("PUT", "/api/clients/{clientId}/members/{userId}", "members"),
  route("DELETE", "/api/clients/{clientId}/members/{userId}", "members"),
  route("GET", "/api/users/{userId}/memberships", "members"),
  route("POST", "/api/users/{userId}/memberships", "members"),
  route("PUT", "/api/users/{userId}/memberships", "members"),
  route("GET", "/api/users/{userId}/memberships/{membershipId}", "members"),
  route("POST", "/api/users/{userId}/memberships/{membershipId}", "members"),
  route("PUT", "/api/users/{userId}/memberships/{membershipId}", "members"),
  route("DELETE", "/api/users/{userId}/memberships/{membershipId}", "members"),
  // 4.3 Invites
  route("GET", "/api/clients/{clientId}/invites", "invites"),
  route("POST", "/api/clients/{clientId}/invites", "invites"),
  route("GET", "/api/clients/{clientId}/invites/{inviteId}", "invites"),
  route("PUT", "/api/clients/{clientId}/invites/{inviteId}", "invites"),
  route("DELETE", "/api/clients/{clientId}/invites/{inviteId}", "invites"),
  route("GET", "/api/users/{userId}/invites", "invites"),
  route("POST", "/api/users/{userId}/invites", "invites"),
  route("GET", "/api/users/{userId}/invites/{inviteId}", "invites"),
  route("PUT", "/api/users/{userId}/invites/{inviteId}", "invites"),
  route("DELETE", "/api/users/{userId}/invites/{inviteId}", "invites"),
  // 4.4 Users
  route("GET", "/api/users", "users"),
  route("GET", "/api/users/{userId}", "users"),
  route("PUT", "/api/users/{userId}", "users"),
  route("DELETE", "/api/users/{userId}", "users"),
  // 4.12 Notifications
  route("GET", "/api/notifications/system", "notifications"),
  route("GET", "/api/notifications/system/{notificationId}", "notifications"),
  route("GET", "/api/users/{userId}/notifications", "notifications"),
  route("GET", "/api/users/{userId}/notifications/{notificationId}", "notifications"),
  route("GET", "/api/clients/{clientId}/notifications", "notifications"),
  route("GET", "/api/clients/{clientId}/notifications/{notificationId}", "notifications"),
  // 4.5 Credentials
  route("GET", "/api/clients/{clientId}/credentials", "credentials"),
  route("POST", "/api/clients/{clientId}/credentials", "credentials"),
  route("GET", "/api/clients/{clientId}/credentials/{credentialId}", "credentials"),
  route("PUT", "/api/clients/{clientId}/credentials/{credentialId}", "credentials"),
  route("DELETE", "/api/clients/{clientId}/credentials/{credentialId}", "credentials"),
  route("POST", "/api/clients/{clientId}/credentials/{credentialId}/test", "credentials"),
  route("POST", "/api/clients/{clientId}/credentials/{credentialId}/token-test", "credentials"),
  // 6.2 The OAuth2 provider's redirect back to the gateway (authorization_code and PKCE flows)
  route("GET", "/webhooks/oauth2", "webhooks", { public: true }),
  // 4.6 Targets
  route("GET", "/api/clients/{clientId}/targets", "targets"),
  route("POST", "/api/clients/{clientId}/targets", "targets"),
  route("GET", "/api/clients/{clientId}/targets/{targetId}", "targets"),
  route("PUT", "/api/clients/{clientId}/targets/{targetId}", "targets"),
  route("DELETE", "/api/clients/{clientId}/targets/{targetId}", "targets"),
  // 4.7 Proxies
  route("GET", "/api/clients/{clientId}/proxies", "proxies"),
  route("POST", "/api/clients/{clientId}/proxies", "proxies"),
  route("GET", "/api/clients/{clientId}/proxies/{proxyId}", "proxies"),
  route("PUT", "/api/clients/{clientId}/proxies/{proxyId}", "proxies"),
  route("DELETE", "/api/clients/{clientId}/proxies/{proxyId}", "proxies"),
  // 4.11 Request logs (read-only)
  route("GET", "/api/clients/{clientId}/proxies/{proxyId}/requests", "requests"),
  route("GET", "/api/clients/{clientId}/proxies/{proxyId}/requests/{requestId}", "requests"),
  // 4.8 Rules, on each of the three parents
  ...(["credentials/{credentialId}", "proxies/{proxyId}", "targets/{targetId}"] as const).flatMap(
    (parent) => [
      route("GET", `/api/clients/{clientId}/${parent}/rules`, "rules"),
      route("POST", `/api/clients/{clientId}/${parent}/rules`, "rules"),
      route("DELETE", `/api/clients/{clientId}/${parent}/rules/{ruleId}`, "rules"),
    ],
  ),
];

/** "GET /api/clients/{clientId}": the key a handler's route table uses. */
export type RouteKey = `${HttpMethod} ${string}`;
export const routeKey = (r: Pick<RouteDefinition, "method" | "path">): RouteKey => `${r.method} ${r.path}`;
