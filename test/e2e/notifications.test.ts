/**
 * Notifications (spec 2.13, 4.12) over real HTTP against the local stack: who may read each inbox
 * (system: any user; user: only oneself; client: every member, the reader role included), that
 * lists never mark anything read and a get does, and the fields a notification shows.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { createNotification, type NotificationScope } from "#lib/domain/notifications.ts";
import {
  createClientFor,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";
const FIELDS = ["createdAt", "message", "notificationId", "pKey", "read", "sKey", "title", "type"];

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

async function notify(scope: NotificationScope, title = `Note ${Date.now()}`) {
  const item = await createNotification(scope, { type: "billing", title, message: `About ${title}` });
  return String(item.notificationId);
}

/** A member of `clientId` with `role`, through the real invite flow (an admin invites, the user accepts). */
async function memberWithRole(admin: TestUser, clientId: string, role: string) {
  const user = await stack.newUser();
  const invite = await admin.api.post(`/api/clients/${clientId}/invites`, { email: user.email, role });
  expect(invite.status, JSON.stringify(invite.body)).toBe(201);
  const accepted = await user.api.put(
    `/api/users/${user.userId}/invites/${invite.body.invites[0].inviteId}`,
    {
      acceptInvite: true,
    },
  );
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
  return user;
}

describe("client notifications: /api/clients/{clientId}/notifications", () => {
  it("every member reads them, a reader too; a get marks one read for the client; a stranger gets 404", async () => {
    const owner = await stack.newUser();
    const clientId = await createClientFor(owner, "Inbox Co");
    const reader = await memberWithRole(owner, clientId, "reader");
    const first = await notify({ kind: "client", clientId }, "Invoice due");
    const second = await notify({ kind: "client", clientId }, "Usage alert");
    const base = `/api/clients/${clientId}/notifications`;

    const list = await reader.api.get(base);
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.message).toBe("Notifications retrieved");
    const ids = list.body.notifications.map((n: { notificationId: string }) => n.notificationId);
    // Newest first (UUIDv7 ids), and the acceptance notification is older than both.
    expect(ids.slice(0, 2)).toEqual([second, first]);
    expect(list.body.pagination).toMatchObject({ page: 1, limit: 20, total: ids.length });
    for (const note of list.body.notifications) {
      expect(Object.keys(note).sort()).toEqual(FIELDS);
      expect(note).toMatchObject({ pKey: clientId, sKey: note.notificationId, read: false });
    }

    const got = await reader.api.get(`${base}/${first}`);
    expect(got.status).toBe(200);
    expect(got.body.message).toBe("Notification retrieved");
    expect(got.body.notifications).toHaveLength(1);
    expect(Object.keys(got.body.notifications[0]).sort()).toEqual(FIELDS);
    expect(got.body.notifications[0]).toMatchObject({
      notificationId: first,
      type: "billing",
      title: "Invoice due",
      message: "About Invoice due",
      read: true,
      pKey: clientId,
      sKey: first,
    });
    // A client notification is the client's: read for every member.
    const afterRead = await owner.api.get(`${base}?limit=2`);
    expect(afterRead.body.notifications).toEqual([
      expect.objectContaining({ notificationId: second, read: false }),
      expect.objectContaining({ notificationId: first, read: true }),
    ]);

    const stranger = await stack.newUser();
    for (const response of [await stranger.api.get(base), await stranger.api.get(`${base}/${first}`)]) {
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ message: "Client not found" });
    }
    expect((await stranger.api.get(`/api/clients/${UNKNOWN_ID}/notifications`)).status).toBe(404);

    const unknown = await reader.api.get(`${base}/${UNKNOWN_ID}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ message: "Notification not found" });
    expect(
      await storedItem({ pKey: keys.clientNotificationPartition(clientId), sKey: UNKNOWN_ID }),
    ).toBeUndefined();

    const badPage = await reader.api.get(`${base}?limit=101`);
    expect(badPage.status).toBe(400);
    expect(badPage.body.fields).toEqual(["limit"]);
  });
});

describe("user notifications: /api/users/{userId}/notifications", () => {
  it("are one's own: another user's path is 403 for the list and for one", async () => {
    const alice = await stack.newUser();
    const mallory = await stack.newUser();
    const id = await notify({ kind: "user", userId: alice.userId }, "For Alice");
    const base = `/api/users/${alice.userId}/notifications`;

    const list = await alice.api.get(base);
    expect(list.status).toBe(200);
    expect(list.body.notifications).toEqual([
      expect.objectContaining({ notificationId: id, pKey: alice.userId, read: false }),
    ]);
    expect(list.body.pagination).toEqual({ page: 1, limit: 20, total: 1, pages: 1 });

    for (const response of [await mallory.api.get(base), await mallory.api.get(`${base}/${id}`)]) {
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ message: "Forbidden: you can only access your own user resources" });
    }
    // Mallory's attempt did not mark it read; Alice's get does.
    expect((await alice.api.get(base)).body.notifications[0].read).toBe(false);
    const got = await alice.api.get(`${base}/${id}`);
    expect(got.status).toBe(200);
    expect(got.body.notifications[0]).toMatchObject({ notificationId: id, read: true, title: "For Alice" });
    expect((await alice.api.get(base)).body.notifications[0].read).toBe(true);
    expect((await alice.api.get(`${base}/${UNKNOWN_ID}`)).status).toBe(404);
  });
});

describe("system notifications: /api/notifications/system", () => {
  it("any user reads them; reading one marks it read for that user only", async () => {
    const id = await notify({ kind: "system" }, "Maintenance");
    const alice = await stack.newUser();
    const bob = await stack.newUser();
    const find = (body: { notifications: { notificationId: string }[] }) =>
      body.notifications.find((n) => n.notificationId === id);

    const list = await alice.api.get("/api/notifications/system?limit=100");
    expect(list.status).toBe(200);
    expect(find(list.body as never)).toMatchObject({ pKey: "SYSTEM", sKey: id, read: false });

    const got = await alice.api.get(`/api/notifications/system/${id}`);
    expect(got.status).toBe(200);
    expect(Object.keys(got.body.notifications[0]).sort()).toEqual(FIELDS);
    expect(got.body.notifications[0]).toMatchObject({ notificationId: id, title: "Maintenance", read: true });

    expect(find((await alice.api.get("/api/notifications/system?limit=100")).body as never)).toMatchObject({
      read: true,
    });
    expect(find((await bob.api.get("/api/notifications/system?limit=100")).body as never)).toMatchObject({
      read: false,
    });
    expect((await bob.api.get(`/api/notifications/system/${UNKNOWN_ID}`)).status).toBe(404);
    expect((await stack.anonymous.get("/api/notifications/system")).status).toBe(401);
  });
});
