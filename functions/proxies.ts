/** Proxies (spec 4.7). */
import { createProxy, deleteProxy, getProxy, listProxies, updateProxy } from "#lib/domain/proxies.ts";
import { createApiHandler } from "#lib/http/api-handler.ts";
import { paginate, parsePageRequest } from "#lib/http/pagination.ts";
import { bodyOf, pathParam } from "#lib/http/request.ts";
import { CreateProxyBody, UpdateProxyBody } from "#lib/http/resource-schemas.ts";

export const handler = createApiHandler({
  "GET /api/clients/{clientId}/proxies": async (req) => {
    const page = parsePageRequest(req.query);
    const { items, pagination } = paginate(
      await listProxies(pathParam(req, "clientId"), req.caller.userId),
      page,
    );
    return { body: { message: "Proxies retrieved", proxies: items, pagination } };
  },
  "POST /api/clients/{clientId}/proxies": async (req) => {
    const proxy = await createProxy(
      pathParam(req, "clientId"),
      req.caller.userId,
      bodyOf(req, CreateProxyBody),
    );
    return { status: 201, body: { message: "Proxy created", proxies: [proxy] } };
  },
  "GET /api/clients/{clientId}/proxies/{proxyId}": async (req) => {
    const proxy = await getProxy(pathParam(req, "clientId"), req.caller.userId, pathParam(req, "proxyId"));
    return { body: { message: "Proxy retrieved", proxies: [proxy] } };
  },
  "PUT /api/clients/{clientId}/proxies/{proxyId}": async (req) => {
    const subset = await updateProxy(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "proxyId"),
      bodyOf(req, UpdateProxyBody),
    );
    return { body: { message: "Proxy updated", proxies: [subset] } };
  },
  "DELETE /api/clients/{clientId}/proxies/{proxyId}": async (req) => {
    await deleteProxy(pathParam(req, "clientId"), req.caller.userId, pathParam(req, "proxyId"));
    return { body: { message: "Proxy deleted, with its rules" } };
  },
});
