/** Request logs (spec 4.11): read-only, GET only. */
import { getRequestLog, listRequestLogs } from "#lib/domain/request-logs.ts";
import { createApiHandler } from "#lib/http/api-handler.ts";
import { pathParam } from "#lib/http/request.ts";

export const handler = createApiHandler({
  "GET /api/clients/{clientId}/proxies/{proxyId}/requests": async (req) => {
    const result = await listRequestLogs(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "proxyId"),
      req.query,
    );
    return { body: { message: "Requests retrieved", ...result } };
  },
  "GET /api/clients/{clientId}/proxies/{proxyId}/requests/{requestId}": async (req) => {
    const detail = await getRequestLog(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "proxyId"),
      pathParam(req, "requestId"),
    );
    return { body: { message: "Request retrieved", requests: [detail] } };
  },
});
