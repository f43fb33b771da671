/**
 * Notifications (spec 2.13, 4.12): three inboxes, system (platform-wide), user and client. Lists
 * never mark anything read; getting one notification marks it read.
 */
import { z } from "zod";
import {
  type Access,
  access,
  type Granted,
  operation,
  type Principal,
  paged,
  pathParams,
  wrapped,
} from "#lib/api/operation.ts";
import { PaginationQuery } from "#lib/db/pagination.ts";
import { listNotifications, type NotificationInbox, readNotification } from "#lib/domain/notifications.ts";
import { NOTIFICATION_TYPES } from "#lib/shared/notification-types.ts";

/** A notification as the API shows it (spec 2.13). */
export const NotificationSchema = z.object({
  notificationId: z.string(),
  type: z
    .enum(NOTIFICATION_TYPES)
    .describe(
      "system, invitation, billing, usage (a meter alert digest), transform-suspended (a client's transform suspended on a data-plane instance); for a user: passwordChanged, newSignIn, passkeyAdded, passkeyRemoved",
    ),
  title: z.string(),
  message: z.string(),
  read: z.boolean().describe("In the system inbox: whether the caller has read it"),
  createdAt: z.string(),
  pKey: z.string().describe("SYSTEM, the user id or the client id"),
  sKey: z.string().describe("Equals notificationId"),
  data: z
    .record(z.string(), z.unknown())
    .optional()
    .describe(
      "Details for programs, by type; absent when the type has none. A usage digest (docs/meters.md, Alert digests): {meterId, proxyId, notifyTrigger, window (the longest window that fired, null for predicate_match), count, periodStart, periodEnd (ISO 8601, end exclusive), cadence, windows (count per window)}",
    ),
});

interface InboxSpec<A extends Access> {
  /** In the operation ids: listSystemNotifications, getClientNotification, ... */
  name: "System" | "User" | "Client";
  path: string;
  params: z.ZodObject<Record<string, z.ZodString>>;
  access: A;
  /** Whose inbox it is and who may read it, for the descriptions. */
  who: string;
  inbox: (input: Granted<A> & { principal: Principal }) => NotificationInbox;
}

/** The list and the get of one inbox. */
const inboxOperations = <A extends Access>(spec: InboxSpec<A>) => {
  // Who is refused: another user's path is 403; a client's non-member 404, a member without the role 403.
  const refusals = {
    public: [],
    user: [],
    systemAdmin: [403],
    self: [403],
    client: [403, 404],
    msp: [403, 404],
  }[spec.access.kind];
  return [
    operation({
      id: `list${spec.name}Notifications`,
      method: "GET",
      path: spec.path,
      group: "notifications",
      summary: `List ${spec.name.toLowerCase()} notifications`,
      description: `${spec.who} Newest first, a page at a time (query \`page\`, default 1, and \`limit\`, default 20, at most 100); listing marks nothing read. Notifications are kept 180 days.`,
      access: spec.access,
      effect: "read",
      params: spec.params,
      query: PaginationQuery,
      response: { status: 200, schema: paged("notifications", NotificationSchema) },
      errors: refusals,
      handler: async (input) => ({
        body: {
          message: "Notifications retrieved",
          ...(await listNotifications(spec.inbox(input), input.query)),
        },
      }),
    }),
    operation({
      id: `get${spec.name}Notification`,
      method: "GET",
      path: `${spec.path}/{notificationId}`,
      group: "notifications",
      summary: `Get a ${spec.name.toLowerCase()} notification (marks it read)`,
      description: `${spec.who} Answers one notification and marks it read, which is the only way a notification becomes read (for the system inbox, read for the caller only).`,
      access: spec.access,
      // Marking it read is the bookkeeping of reading it, not a change to what the inbox holds.
      effect: "read",
      params: z.object({ ...spec.params.shape, notificationId: z.string() }),
      response: { status: 200, schema: wrapped("notifications", NotificationSchema) },
      errors: [...new Set([...refusals, 404])],
      handler: async (input) => ({
        body: {
          message: "Notification retrieved",
          notifications: [await readNotification(spec.inbox(input), input.params.notificationId)],
        },
      }),
    }),
  ];
};

export const notificationOperations = [
  ...inboxOperations({
    name: "System",
    path: "/api/notifications/system",
    params: pathParams(),
    access: access.user,
    who: "The platform-wide notifications, readable by any authenticated user.",
    inbox: ({ principal }) => ({ kind: "system", readerId: principal.userId }),
  }),
  ...inboxOperations({
    name: "User",
    path: "/api/users/{userId}/notifications",
    params: pathParams("userId"),
    access: access.self,
    who: "The caller's own notifications (the path's user must be the caller).",
    inbox: ({ principal }) => ({ kind: "user", userId: principal.userId }),
  }),
  ...inboxOperations({
    name: "Client",
    path: "/api/clients/{clientId}/notifications",
    params: pathParams("clientId"),
    access: access.client("reader"),
    who: "The client's notifications (billing, usage alerts, accepted invites), readable by every member.",
    inbox: ({ member }) => ({ kind: "client", access: member }),
  }),
];
