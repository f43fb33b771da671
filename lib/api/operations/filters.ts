/**
 * Filters and overrides (issue 10, spec 1.5, 2.14, 4.15; docs/filters.md): a proxy's data-plane
 * policies (IP allow/deny lists, required and stripped request headers, fields removed from JSON
 * responses), its path-prefix overrides (timeout, additional headers), and the operator-set
 * per-client overrides of the plan limits.
 */
import { z } from "zod";
import { access, MessageResponse, operation, pathParams, wrapped } from "#lib/api/operation.ts";
import {
  MAX_FILTER_HEADERS,
  MAX_IP_RANGES,
  MAX_PATH_OVERRIDES,
  MAX_REMOVED_FIELDS,
} from "#lib/domain/filters/constants.ts";
import { UpdateFiltersBody, UpdateOverridesBody } from "#lib/domain/filters/schema.ts";
import {
  getLimitOverrides,
  setLimitOverrides,
  UpdateLimitOverridesBody,
} from "#lib/domain/limit-overrides.ts";
import { PLAN_TIERS, PLATFORM_MAX_REQUESTS_PER_MINUTE } from "#lib/domain/plans.ts";
import {
  clearFilters,
  clearOverrides,
  getFilters,
  getOverrides,
  updateFilters,
  updateOverrides,
} from "#lib/domain/proxy-policies.ts";

const UpdatedAt = z.string().nullable().describe("When they were last changed (null: never set)");

export const FiltersSchema = z.object({
  proxyId: z.string().describe("The proxy id"),
  ipAllow: z
    .array(z.string())
    .describe("CIDR ranges or addresses (IPv4, IPv6); when not empty, only callers inside one pass"),
  ipDeny: z.array(z.string()).describe("CIDR ranges or addresses refused (deny wins over allow)"),
  requiredHeaders: z.array(z.string()).describe("Lowercase header names every request must carry (else 400)"),
  stripHeaders: z
    .array(z.string())
    .describe("Lowercase header names removed from the request before forwarding"),
  removeResponseFields: z
    .array(z.string())
    .describe("Dot paths (`*` for every element or property) removed from JSON response bodies"),
  updatedAt: UpdatedAt,
});

export const OverridesSchema = z.object({
  proxyId: z.string().describe("The proxy id"),
  pathOverrides: z
    .array(
      z.object({
        pathPrefix: z.string().describe("A path after /api/{proxyId}, matched on segment boundaries"),
        timeoutSeconds: z.number().int().optional().describe("The target timeout for these paths, 1-60"),
        additionalHeaders: z
          .record(z.string(), z.string())
          .optional()
          .describe("Headers added to these requests, over the proxy's proxyAdditionalHeaders"),
      }),
    )
    .describe("Per path prefix; the longest prefix covering the request's path applies"),
  updatedAt: UpdatedAt,
});

export const LimitOverridesSchema = z.object({
  clientId: z.string(),
  requestsPerMinute: z.number().int().nullable().describe("The override (null: the plan's figure applies)"),
  planTier: z.enum(PLAN_TIERS),
  planRequestsPerMinute: z.number().int().describe("What the plan alone grants"),
  effectiveRequestsPerMinute: z.number().int().describe("What applies now"),
  updatedAt: UpdatedAt,
});

const ProxyParams = pathParams("clientId", "proxyId");
const ClientParams = pathParams("clientId");
const proxyBase = "/api/clients/{clientId}/proxies/{proxyId}";
const NEXT_REQUEST = "Takes effect on the proxy's next request.";

/** Filters and overrides of a proxy (group `proxies`). */
export const proxyPolicyOperations = [
  operation({
    id: "getProxyFilters",
    method: "GET",
    path: `${proxyBase}/filters`,
    group: "proxies",
    summary: "Get a proxy's filters",
    description:
      "Answers the proxy's IP allow and deny lists, required and stripped request headers and the fields removed from JSON responses (empty lists when none are set).",
    access: access.client("reader"),
    effect: "read",
    params: ProxyParams,
    response: { status: 200, schema: wrapped("filters", FiltersSchema) },
    errors: [403, 404],
    handler: async ({ member, params }) => ({
      body: { message: "Filters retrieved", filters: [await getFilters(member, params.proxyId)] },
    }),
  }),
  operation({
    id: "updateProxyFilters",
    method: "PUT",
    path: `${proxyBase}/filters`,
    group: "proxies",
    summary: "Set a proxy's filters",
    description: `Partial: each list given replaces the stored one, \`null\` clears it. \`ipAllow\`, \`ipDeny\`: at most ${MAX_IP_RANGES} CIDR ranges each (IPv4 or IPv6, a bare address is one host); a denied caller gets 403 proxy-access-denied. \`requiredHeaders\`, \`stripHeaders\`: at most ${MAX_FILTER_HEADERS} header names each (gateway-managed names cannot be stripped); a request without a required header gets 400 required-header-missing. \`removeResponseFields\`: at most ${MAX_REMOVED_FIELDS} dot paths. 400 names each failing field. ${NEXT_REQUEST}`,
    access: access.client("devops"),
    effect: "write",
    params: ProxyParams,
    body: UpdateFiltersBody,
    response: { status: 200, schema: wrapped("filters", FiltersSchema) },
    errors: [403, 404, 409],
    handler: async ({ member, params, body }) => ({
      body: { message: "Filters updated", filters: [await updateFilters(member, params.proxyId, body)] },
    }),
  }),
  operation({
    id: "deleteProxyFilters",
    method: "DELETE",
    path: `${proxyBase}/filters`,
    group: "proxies",
    summary: "Remove a proxy's filters",
    description: `Clears every filter of the proxy. Answers \`{message}\`. ${NEXT_REQUEST}`,
    access: access.client("devops"),
    effect: "delete",
    params: ProxyParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404],
    handler: async ({ member, params }) => {
      await clearFilters(member, params.proxyId);
      return { body: { message: "Filters removed" } };
    },
  }),
  operation({
    id: "getProxyOverrides",
    method: "GET",
    path: `${proxyBase}/overrides`,
    group: "proxies",
    summary: "Get a proxy's path overrides",
    description:
      "Answers the proxy's per-path-prefix overrides (timeout, additional headers). The proxy-wide settings are the proxy's own proxyTimeoutSeconds and proxyAdditionalHeaders.",
    access: access.client("reader"),
    effect: "read",
    params: ProxyParams,
    response: { status: 200, schema: wrapped("overrides", OverridesSchema) },
    errors: [403, 404],
    handler: async ({ member, params }) => ({
      body: { message: "Overrides retrieved", overrides: [await getOverrides(member, params.proxyId)] },
    }),
  }),
  operation({
    id: "updateProxyOverrides",
    method: "PUT",
    path: `${proxyBase}/overrides`,
    group: "proxies",
    summary: "Set a proxy's path overrides",
    description: `\`pathOverrides\` (at most ${MAX_PATH_OVERRIDES}; \`null\` clears) replaces the stored list: each {pathPrefix (starts with /, unique), timeoutSeconds 1-60, additionalHeaders}, at least one of the two settings. The longest prefix covering the request's path (on segment boundaries) applies: its timeout replaces the proxy's, its headers are added over the proxy's. 400 names each failing field. ${NEXT_REQUEST}`,
    access: access.client("devops"),
    effect: "write",
    params: ProxyParams,
    body: UpdateOverridesBody,
    response: { status: 200, schema: wrapped("overrides", OverridesSchema) },
    errors: [403, 404, 409],
    handler: async ({ member, params, body }) => ({
      body: {
        message: "Overrides updated",
        overrides: [await updateOverrides(member, params.proxyId, body)],
      },
    }),
  }),
  operation({
    id: "deleteProxyOverrides",
    method: "DELETE",
    path: `${proxyBase}/overrides`,
    group: "proxies",
    summary: "Remove a proxy's path overrides",
    description: `Clears every path override of the proxy. Answers \`{message}\`. ${NEXT_REQUEST}`,
    access: access.client("devops"),
    effect: "delete",
    params: ProxyParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404],
    handler: async ({ member, params }) => {
      await clearOverrides(member, params.proxyId);
      return { body: { message: "Overrides removed" } };
    },
  }),
];

/** Plan limit overrides of a client, for system administrators (group `clients`). */
export const limitOverrideOperations = [
  operation({
    id: "getClientLimitOverrides",
    method: "GET",
    path: "/api/clients/{clientId}/limit-overrides",
    group: "clients",
    summary: "Get a client's plan limit overrides (system administrators)",
    description:
      "Answers the operator-set override of the plan's requests per minute, the plan's own figure and the one that applies. System administrators only.",
    access: access.systemAdmin,
    effect: "read",
    params: ClientParams,
    response: { status: 200, schema: wrapped("limitOverrides", LimitOverridesSchema) },
    errors: [403, 404],
    handler: async ({ params }) => ({
      body: {
        message: "Limit overrides retrieved",
        limitOverrides: [await getLimitOverrides(params.clientId)],
      },
    }),
  }),
  operation({
    id: "updateClientLimitOverrides",
    method: "PUT",
    path: "/api/clients/{clientId}/limit-overrides",
    group: "clients",
    summary: "Set a client's plan limit overrides (system administrators)",
    description: `\`requestsPerMinute\` (1-${PLATFORM_MAX_REQUESTS_PER_MINUTE}, the platform maximum; \`null\` removes the override) replaces the plan's requests per minute, per proxy credential on the data plane and per user token on the Core API. System administrators only. Takes effect on the client's next proxied request in every region.`,
    access: access.systemAdmin,
    effect: "write",
    params: ClientParams,
    body: UpdateLimitOverridesBody,
    response: { status: 200, schema: wrapped("limitOverrides", LimitOverridesSchema) },
    errors: [403, 404],
    handler: async ({ params, body }) => ({
      body: {
        message: "Limit overrides updated",
        limitOverrides: [await setLimitOverrides(params.clientId, body)],
      },
    }),
  }),
  operation({
    id: "deleteClientLimitOverrides",
    method: "DELETE",
    path: "/api/clients/{clientId}/limit-overrides",
    group: "clients",
    summary: "Remove a client's plan limit overrides (system administrators)",
    description:
      "Removes the override: the plan's figure applies again. Answers `{message}`. System administrators only.",
    access: access.systemAdmin,
    effect: "delete",
    params: ClientParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404],
    handler: async ({ params }) => {
      await setLimitOverrides(params.clientId, { requestsPerMinute: null });
      return { body: { message: "Limit overrides removed" } };
    },
  }),
];
