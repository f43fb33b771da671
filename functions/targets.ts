/** Targets (spec 4.6). */
import { createTarget, deleteTarget, getTarget, listTargets, updateTarget } from "#lib/domain/targets.ts";
import { createApiHandler } from "#lib/http/api-handler.ts";
import { paginate, parsePageRequest } from "#lib/http/pagination.ts";
import { bodyOf, pathParam } from "#lib/http/request.ts";
import { CreateTargetBody, UpdateTargetBody } from "#lib/http/resource-schemas.ts";

export const handler = createApiHandler({
  "GET /api/clients/{clientId}/targets": async (req) => {
    const page = parsePageRequest(req.query);
    const { items, pagination } = paginate(
      await listTargets(pathParam(req, "clientId"), req.caller.userId),
      page,
    );
    return { body: { message: "Targets retrieved", targets: items, pagination } };
  },
  "POST /api/clients/{clientId}/targets": async (req) => {
    const target = await createTarget(
      pathParam(req, "clientId"),
      req.caller.userId,
      bodyOf(req, CreateTargetBody),
    );
    return { status: 201, body: { message: "Target created", targets: [target] } };
  },
  "GET /api/clients/{clientId}/targets/{targetId}": async (req) => {
    const target = await getTarget(pathParam(req, "clientId"), req.caller.userId, pathParam(req, "targetId"));
    return { body: { message: "Target retrieved", targets: [target] } };
  },
  "PUT /api/clients/{clientId}/targets/{targetId}": async (req) => {
    const target = await updateTarget(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "targetId"),
      bodyOf(req, UpdateTargetBody),
    );
    return { body: { message: "Target updated", targets: [target] } };
  },
  "DELETE /api/clients/{clientId}/targets/{targetId}": async (req) => {
    const { deletedProxies } = await deleteTarget(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "targetId"),
    );
    return {
      body: {
        message: `Target deleted, with ${deletedProxies} prox${deletedProxies === 1 ? "y" : "ies"} using it`,
      },
    };
  },
});
