/** Proxies (spec 4.7): the regional bindings of a proxy credential, a target and a target credential. */
import { z } from "zod";
import { access, MessageResponse, operation, paged, pathParams, wrapped } from "#lib/api/operation.ts";
import { ProxyItem } from "#lib/db/entities/proxy.ts";
import { PaginationQuery, paginate } from "#lib/db/pagination.ts";
import { createProxy, deleteProxy, getProxy, listProxies, updateProxy } from "#lib/domain/proxies.ts";
import { CreateProxyBody, UpdateProxyBody } from "#lib/http/resource-schemas.ts";

const {
  entity: _entity,
  proxyVersion: _proxyVersion,
  deletingAt: _deletingAt,
  ...proxyFields
} = ProxyItem.shape;

/** A proxy as the API shows it (spec 2.7, plus its data-plane URL, timeout and notes): the stored fields without internals. */
export const ProxySchema = z.object({
  ...proxyFields,
  pKey: z.string().describe("The client id"),
  sKey: z.string().describe("The proxy id, used in data-plane URLs"),
  userId: z.string().describe("The user who created the proxy"),
  proxyRegion: z.string().describe("Immutable"),
  proxyUrl: z
    .string()
    .nullable()
    .describe(
      "Where callers send requests: {region_base_url}/api/{proxyId} (null if the region has no data-plane URL configured)",
    ),
  proxyAlias: z
    .string()
    .nullable()
    .optional()
    .describe("Lower case, unique within the client (null when released)"),
});

/** A PUT answers the subset of spec 4.7: the keys, the changed fields and proxyUpdatedAt. */
const UpdatedProxySchema = ProxySchema.omit({ proxyUrl: true })
  .partial()
  .required({ pKey: true, sKey: true, proxyUpdatedAt: true });

const ClientParams = pathParams("clientId");
const ProxyParams = pathParams("clientId", "proxyId");

export const proxyOperations = [
  operation({
    id: "listProxies",
    method: "GET",
    path: "/api/clients/{clientId}/proxies",
    group: "proxies",
    summary: "List proxies",
    description:
      "Lists the client's proxies in every region, newest first, a page at a time (query `page`, default 1, and `limit`, default 20, at most 100).",
    access: access.client("reader"),
    effect: "read",
    params: ClientParams,
    query: PaginationQuery,
    response: { status: 200, schema: paged("proxies", ProxySchema) },
    errors: [403, 404],
    handler: async ({ member, query }) => {
      const { items, pagination } = paginate(await listProxies(member), query);
      return { body: { message: "Proxies retrieved", proxies: items, pagination } };
    },
  }),
  operation({
    id: "createProxy",
    method: "POST",
    path: "/api/clients/{clientId}/proxies",
    group: "proxies",
    summary: "Create a proxy",
    description:
      "Binds a proxy credential (how callers authenticate), a target and a target credential (how the gateway authenticates to the target), all in the proxy's region. The links are checked at creation and kept consistent in one transaction; an alias must be unique within the client. Callers then use `proxyUrl`.",
    access: access.client("devops"),
    effect: "write",
    params: ClientParams,
    body: CreateProxyBody,
    response: { status: 201, schema: wrapped("proxies", ProxySchema) },
    errors: [403, 404, 409],
    handler: async ({ member, body }) => ({
      status: 201,
      body: { message: "Proxy created", proxies: [await createProxy(member, body)] },
    }),
  }),
  operation({
    id: "getProxy",
    method: "GET",
    path: "/api/clients/{clientId}/proxies/{proxyId}",
    group: "proxies",
    summary: "Get a proxy",
    description: "Answers one proxy of the client, whatever its region.",
    access: access.client("reader"),
    effect: "read",
    params: ProxyParams,
    response: { status: 200, schema: wrapped("proxies", ProxySchema) },
    errors: [403, 404],
    handler: async ({ member, params }) => ({
      body: { message: "Proxy retrieved", proxies: [await getProxy(member, params.proxyId)] },
    }),
  }),
  operation({
    id: "updateProxy",
    method: "PUT",
    path: "/api/clients/{clientId}/proxies/{proxyId}",
    group: "proxies",
    summary: "Update a proxy",
    description:
      "Partial update: only the fields given change (the region cannot). Changed links are checked again, as at creation. Answers the keys, the changed fields and `proxyUpdatedAt`. A change reaches the data plane on the next request.",
    access: access.client("devops"),
    effect: "write",
    params: ProxyParams,
    body: UpdateProxyBody,
    response: { status: 200, schema: wrapped("proxies", UpdatedProxySchema) },
    errors: [403, 404, 409],
    handler: async ({ member, params, body }) => ({
      body: { message: "Proxy updated", proxies: [await updateProxy(member, params.proxyId, body)] },
    }),
  }),
  operation({
    id: "deleteProxy",
    method: "DELETE",
    path: "/api/clients/{clientId}/proxies/{proxyId}",
    group: "proxies",
    summary: "Delete a proxy",
    description:
      "Deletes the proxy with its rules and meters (and the meters' counters) at once; its data-plane URL stops answering.",
    access: access.client("devops"),
    effect: "delete",
    params: ProxyParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404],
    handler: async ({ member, params }) => {
      await deleteProxy(member, params.proxyId);
      return { body: { message: "Proxy deleted, with its rules and meters" } };
    },
  }),
];
