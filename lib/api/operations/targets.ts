/** Targets (spec 4.6): the APIs proxies forward to, each bound to one region. */
import { z } from "zod";
import { access, MessageResponse, operation, paged, pathParams, wrapped } from "#lib/api/operation.ts";
import { TargetItem } from "#lib/db/entities/target.ts";
import { PaginationQuery, paginate } from "#lib/db/pagination.ts";
import { createTarget, deleteTarget, getTarget, listTargets, updateTarget } from "#lib/domain/targets.ts";
import { CreateTargetBody, UpdateTargetBody } from "#lib/http/resource-schemas.ts";

const { entity: _entity, deletingAt: _deletingAt, ...targetFields } = TargetItem.shape;

/** A target as the API shows it (spec 2.6, plus its id and notes): the stored fields without internals. */
export const TargetSchema = z.object({
  ...targetFields,
  pKey: z.string().describe("The client id"),
  sKey: z.string().describe("The target id"),
  userId: z.string().describe("The user who created the target"),
  targetBaseURL: z.string().describe("Base URL of the target API; a proxy appends the caller's path to it"),
  targetTestPath: z.string().describe("Health-check path, relative to the base URL"),
  targetRegion: z.string().describe("Immutable"),
  targetDefaultRuleEffect: z
    .enum(["allow", "deny"])
    .describe("What a request matching none of the target's rules gets"),
});

const ClientParams = pathParams("clientId");
const TargetParams = pathParams("clientId", "targetId");

export const targetOperations = [
  operation({
    id: "listTargets",
    method: "GET",
    path: "/api/clients/{clientId}/targets",
    group: "targets",
    summary: "List targets",
    description:
      "Lists the client's targets in every region, newest first, a page at a time (query `page`, default 1, and `limit`, default 20, at most 100).",
    access: access.client("reader"),
    effect: "read",
    params: ClientParams,
    query: PaginationQuery,
    response: { status: 200, schema: paged("targets", TargetSchema) },
    errors: [403, 404],
    handler: async ({ member, query }) => {
      const { items, pagination } = paginate(await listTargets(member), query);
      return { body: { message: "Targets retrieved", targets: items, pagination } };
    },
  }),
  operation({
    id: "createTarget",
    method: "POST",
    path: "/api/clients/{clientId}/targets",
    group: "targets",
    summary: "Create a target",
    description:
      "Registers an upstream API (its base URL and a health-check path) in one region. Proxies in that region can then forward to it; `targetDefaultRuleEffect` (default `allow`) decides requests that match none of its rules. A client can have a limited number of targets per region.",
    access: access.client("devops"),
    effect: "write",
    params: ClientParams,
    body: CreateTargetBody,
    response: { status: 201, schema: wrapped("targets", TargetSchema) },
    errors: [403, 404],
    handler: async ({ member, body }) => ({
      status: 201,
      body: { message: "Target created", targets: [await createTarget(member, body)] },
    }),
  }),
  operation({
    id: "getTarget",
    method: "GET",
    path: "/api/clients/{clientId}/targets/{targetId}",
    group: "targets",
    summary: "Get a target",
    description: "Answers one target of the client, whatever its region.",
    access: access.client("reader"),
    effect: "read",
    params: TargetParams,
    response: { status: 200, schema: wrapped("targets", TargetSchema) },
    errors: [403, 404],
    handler: async ({ member, params }) => ({
      body: { message: "Target retrieved", targets: [await getTarget(member, params.targetId)] },
    }),
  }),
  operation({
    id: "updateTarget",
    method: "PUT",
    path: "/api/clients/{clientId}/targets/{targetId}",
    group: "targets",
    summary: "Update a target",
    description:
      "Partial update: only the fields given change; the region cannot. Answers the whole target. Proxies using it see the change on their next request.",
    access: access.client("devops"),
    effect: "write",
    params: TargetParams,
    body: UpdateTargetBody,
    response: { status: 200, schema: wrapped("targets", TargetSchema) },
    errors: [403, 404],
    handler: async ({ member, params, body }) => ({
      body: { message: "Target updated", targets: [await updateTarget(member, params.targetId, body)] },
    }),
  }),
  operation({
    id: "deleteTarget",
    method: "DELETE",
    path: "/api/clients/{clientId}/targets/{targetId}",
    group: "targets",
    summary: "Delete a target",
    description:
      "Deletes the target, its rules and every proxy that uses it (with their rules); the message says how many proxies went. Repeating an interrupted delete finishes it.",
    access: access.client("devops"),
    effect: "delete",
    params: TargetParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404],
    handler: async ({ member, params }) => {
      const { deletedProxies } = await deleteTarget(member, params.targetId);
      return {
        body: {
          message: `Target deleted, with ${deletedProxies} prox${deletedProxies === 1 ? "y" : "ies"} using it`,
        },
      };
    },
  }),
];
