/** Notifications (spec 4.12): lists never mark read; getting one by id marks it read. */
import { authorizeClient } from "#lib/domain/clients.ts";
import { requireSelf } from "#lib/domain/members.ts";
import { listNotifications, type NotificationScope, readNotification } from "#lib/domain/notifications.ts";
import { type ApiRequest, createApiHandler } from "#lib/http/api-handler.ts";
import { parsePageRequest } from "#lib/http/pagination.ts";
import { pathParam } from "#lib/http/request.ts";

async function list(req: ApiRequest, scope: NotificationScope) {
  const result = await listNotifications(scope, parsePageRequest(req.query), req.caller.userId);
  return { body: { message: "Notifications retrieved", ...result } };
}

async function readOne(req: ApiRequest, scope: NotificationScope) {
  const notification = await readNotification(scope, pathParam(req, "notificationId"), req.caller.userId);
  return { body: { message: "Notification retrieved", notifications: [notification] } };
}

const userScope = (req: ApiRequest): NotificationScope => ({
  kind: "user",
  userId: requireSelf(req.caller.userId, req.params.userId),
});

async function clientScope(req: ApiRequest): Promise<NotificationScope> {
  const clientId = pathParam(req, "clientId");
  await authorizeClient(clientId, req.caller.userId, "view");
  return { kind: "client", clientId };
}

export const handler = createApiHandler({
  "GET /api/notifications/system": (req) => list(req, { kind: "system" }),
  "GET /api/notifications/system/{notificationId}": (req) => readOne(req, { kind: "system" }),
  "GET /api/users/{userId}/notifications": (req) => list(req, userScope(req)),
  "GET /api/users/{userId}/notifications/{notificationId}": (req) => readOne(req, userScope(req)),
  "GET /api/clients/{clientId}/notifications": async (req) => list(req, await clientScope(req)),
  "GET /api/clients/{clientId}/notifications/{notificationId}": async (req) =>
    readOne(req, await clientScope(req)),
});
