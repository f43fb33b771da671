/** Client invites (spec 2.3, 3, 4.3) over real HTTP against the local stack. */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { keys } from "#lib/db/keys.ts";
import { sentEmails } from "../support/emulator.ts";
import {
  createClientFor,
  joinClient,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const APP_URL = "http://app.gateway.test";
const WEEK_SECONDS = 7 * 86_400;
const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

let stack: TestStack;
let mailCounter = 0;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** An address nobody has used yet (no user account behind it). */
function freshEmail(label = "invitee") {
  mailCounter += 1;
  return `${label}${mailCounter}-${Date.now()}@example.test`;
}

/** A new owner (fresh token, so the per-token rate limit never bites) with a new client. */
async function ownerWithClient(clientName = "Acme") {
  const owner = await stack.newUser();
  const clientId = await createClientFor(owner, clientName);
  return { owner, clientId };
}

async function invite(admin: TestUser, clientId: string, email: string, role = "user") {
  const response = await admin.api.post(`/api/clients/${clientId}/invites`, { email, role });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.invites[0] as { inviteId: string; userEmail: string; roles: string[]; TTL: number };
}

/** Set the TTL of an invite and its e-mail lock directly in the store (DynamoDB deletes expired items late). */
async function setInviteTtl(clientId: string, inviteId: string, email: string, ttl: number) {
  const { tableName, homeRegion } = getConfig();
  for (const key of [keys.invite(clientId, inviteId), keys.inviteEmailLock(clientId, email)]) {
    await dynamo(homeRegion).send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        UpdateExpression: "SET #ttl = :ttl",
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeNames: { "#ttl": "TTL" },
        ExpressionAttributeValues: { ":ttl": ttl },
      }),
    );
  }
}

const expireInvite = (clientId: string, inviteId: string, email: string) =>
  setInviteTtl(clientId, inviteId, email, nowSeconds() - 60);

/** The e-mails SES recorded for this address that carry this invite's accept link. */
async function inviteEmails(email: string, inviteId: string) {
  return (await sentEmails(email)).filter((m) => m.body.includes(`${APP_URL}/invites/${inviteId}`));
}

async function expectInviteGone(clientId: string, inviteId: string, email: string) {
  expect(await storedItem(keys.invite(clientId, inviteId))).toBeUndefined();
  expect(await storedItem(keys.inviteEmailLock(clientId, email))).toBeUndefined();
}

async function expectNoInviteStored(admin: TestUser, clientId: string, email: string) {
  expect(await storedItem(keys.inviteEmailLock(clientId, email))).toBeUndefined();
  const list = await admin.api.get(`/api/clients/${clientId}/invites`);
  expect(list.status).toBe(200);
  expect(list.body.invites.filter((i: { userEmail: string }) => i.userEmail === email)).toEqual([]);
}

const userClients = async (userId: string) => [
  ...((((await storedItem(keys.user(userId)))?.userClients as Set<string> | undefined) ?? []) as Set<string>),
];

describe("POST /api/clients/{clientId}/invites", () => {
  it("creates the invite with the spec fields, stores it with its e-mail lock, and e-mails the accept link", async () => {
    const { owner, clientId } = await ownerWithClient("Invite Co");
    const raw = `New.Person${Date.now()}@Example.TEST`;
    const email = raw.toLowerCase();
    const before = nowSeconds();
    const response = await owner.api.post(`/api/clients/${clientId}/invites`, { email: raw, role: "admin" });
    const after = nowSeconds();
    expect(response.status).toBe(201);
    expect(response.body.message).toEqual(expect.any(String));
    expect(response.body.invites).toHaveLength(1);
    const created = response.body.invites[0];
    expect(created).toMatchObject({
      inviteId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      clientName: "Invite Co",
      pKey: "INVITATION",
      sKey: created.inviteId,
      roles: ["admin"],
      userEmail: email,
      parentId: clientId,
    });
    // The declared fields, nothing stored besides them (keys, index attributes, entity).
    expect(Object.keys(created).sort()).toEqual(
      [
        "TTL",
        "clientName",
        "inviteCreated",
        "inviteExpiresAt",
        "inviteId",
        "inviteUpdated",
        "invitedBy",
        "pKey",
        "parentId",
        "roles",
        "sKey",
        "userEmail",
      ].sort(),
    );
    expect(created).toMatchObject({ invitedBy: owner.userId, inviteCreated: created.inviteUpdated });
    expect(created.inviteExpiresAt).toBe(new Date(created.TTL * 1000).toISOString());
    expect(Number.isInteger(created.TTL)).toBe(true);
    expect(created.TTL).toBeGreaterThanOrEqual(before + WEEK_SECONDS - 2);
    expect(created.TTL).toBeLessThanOrEqual(after + WEEK_SECONDS + 2);

    const stored = await storedItem(keys.invite(clientId, created.inviteId));
    expect(stored).toMatchObject({
      inviteId: created.inviteId,
      clientId,
      clientName: "Invite Co",
      roles: ["admin"],
      userEmail: email,
      invitedBy: owner.userId,
      TTL: created.TTL,
      ...keys.inviteByEmailIndex(email, created.inviteId),
    });
    expect(await storedItem(keys.inviteEmailLock(clientId, email))).toMatchObject({
      inviteId: created.inviteId,
      TTL: created.TTL,
    });

    const mails = await sentEmails(email);
    expect(mails).toHaveLength(1);
    const mail = mails[0]!;
    expect(mail.destinations.ToAddresses).toEqual([email]);
    expect(mail.subject).toBe("You are invited to join Invite Co");
    expect(mail.body).toContain(`${APP_URL}/invites/${created.inviteId}`);
  });

  it.each([
    [{ role: "user" }, ["email"]],
    [{ email: "not-an-email", role: "user" }, ["email"]],
    [{ email: 42, role: "user" }, ["email"]],
    [{ email: "EMAIL", role: "superuser" }, ["role"]],
    [{ email: "EMAIL" }, ["role"]],
    [{ email: "EMAIL", role: "user", roles: ["admin"] }, ["roles"]],
    [{ email: "EMAIL", role: "user", clientId: "other" }, ["clientId"]],
  ] as [Record<string, unknown>, string[]][])(
    "rejects %j with 400 naming %j, storing and sending nothing",
    async (template, fields) => {
      const { owner, clientId } = await ownerWithClient();
      const email = freshEmail();
      const body = { ...template, ...(template.email === "EMAIL" ? { email } : {}) };
      const response = await owner.api.post(`/api/clients/${clientId}/invites`, body);
      expect(response.status).toBe(400);
      expect(response.body.message).toBe("Input failed data validation");
      expect(response.body.fields).toEqual(fields);
      await expectNoInviteStored(owner, clientId, email);
      expect(await sentEmails(email)).toEqual([]);
    },
  );

  it("refuses a plain user (403), a non-member and an unknown client (404 Client not found)", async () => {
    const { owner, clientId } = await ownerWithClient();
    const member = await stack.newUser();
    await joinClient(owner, clientId, member, "user");
    const email = freshEmail();

    const asUser = await member.api.post(`/api/clients/${clientId}/invites`, { email, role: "user" });
    expect(asUser.status).toBe(403);
    expect(asUser.body.message).toBe("Forbidden: requires the admin role");

    const stranger = await stack.newUser();
    const asStranger = await stranger.api.post(`/api/clients/${clientId}/invites`, { email, role: "user" });
    expect(asStranger.status).toBe(404);
    expect(asStranger.body).toEqual({ message: "Client not found" });
    const unknown = await stranger.api.post(`/api/clients/${UNKNOWN_ID}/invites`, { email, role: "user" });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ message: "Client not found" });

    await expectNoInviteStored(owner, clientId, email);
    expect(await sentEmails(email)).toEqual([]);
  });

  it("lets only an owner invite an owner; an admin may invite admins and users", async () => {
    const { owner, clientId } = await ownerWithClient();
    const admin = await stack.newUser();
    await joinClient(owner, clientId, admin, "admin");

    const ownerEmail = freshEmail();
    const refused = await admin.api.post(`/api/clients/${clientId}/invites`, {
      email: ownerEmail,
      role: "owner",
    });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/owner/);
    await expectNoInviteStored(owner, clientId, ownerEmail);
    expect(await sentEmails(ownerEmail)).toEqual([]);

    expect((await invite(admin, clientId, freshEmail(), "admin")).roles).toEqual(["admin"]);
    expect((await invite(admin, clientId, freshEmail(), "user")).roles).toEqual(["user"]);
    const byOwner = await invite(owner, clientId, ownerEmail, "owner");
    expect(byOwner.roles).toEqual(["owner"]);
    expect((await storedItem(keys.invite(clientId, byOwner.inviteId)))?.roles).toEqual(["owner"]);
  });

  it("refuses to invite an existing member (409), whatever the case of the address", async () => {
    const { owner, clientId } = await ownerWithClient();
    const member = await stack.newUser();
    await joinClient(owner, clientId, member, "user");
    const mailsBefore = (await sentEmails(member.email)).length;

    for (const email of [member.email, member.email.toUpperCase(), owner.email]) {
      const response = await owner.api.post(`/api/clients/${clientId}/invites`, { email, role: "admin" });
      expect(response.status).toBe(409);
      expect(response.body.message).toBe("User is already a member of this client");
    }
    await expectNoInviteStored(owner, clientId, member.email);
    await expectNoInviteStored(owner, clientId, owner.email);
    expect(await sentEmails(member.email)).toHaveLength(mailsBefore);
  });

  it("refuses a second pending invite for the same e-mail (409); after a cancel a new one can be made", async () => {
    const { owner, clientId } = await ownerWithClient();
    const email = freshEmail();
    const first = await invite(owner, clientId, email, "user");

    for (const again of [email, email.toUpperCase()]) {
      const response = await owner.api.post(`/api/clients/${clientId}/invites`, {
        email: again,
        role: "admin",
      });
      expect(response.status).toBe(409);
      expect(response.body.message).toBe("Invite already exists for this email");
    }
    const list = await owner.api.get(`/api/clients/${clientId}/invites`);
    expect(list.body.invites.map((i: { inviteId: string }) => i.inviteId)).toEqual([first.inviteId]);
    expect((await storedItem(keys.inviteEmailLock(clientId, email)))?.inviteId).toBe(first.inviteId);
    expect(await sentEmails(email)).toHaveLength(1);

    const cancelled = await owner.api.delete(`/api/clients/${clientId}/invites/${first.inviteId}`);
    expect(cancelled.status).toBe(200);
    const second = await invite(owner, clientId, email, "admin");
    expect(second.inviteId).not.toBe(first.inviteId);
    expect((await storedItem(keys.inviteEmailLock(clientId, email)))?.inviteId).toBe(second.inviteId);
    expect(await inviteEmails(email, second.inviteId)).toHaveLength(1);
  });

  it("writes an invitation notification for an invitee who already has an account", async () => {
    const { owner, clientId } = await ownerWithClient("Notifying Co");
    const invitee = await stack.newUser();
    const created = await invite(owner, clientId, invitee.email, "user");
    expect(await inviteEmails(invitee.email, created.inviteId)).toHaveLength(1);

    const response = await invitee.api.get(`/api/users/${invitee.userId}/notifications`);
    expect(response.status).toBe(200);
    const invitations = response.body.notifications.filter((n: { type: string }) => n.type === "invitation");
    expect(invitations).toHaveLength(1);
    expect(invitations[0]).toMatchObject({
      type: "invitation",
      read: false,
      title: expect.stringContaining("Notifying Co"),
      message: expect.stringContaining("Notifying Co"),
    });
  });

  it("lets exactly one of two parallel invites for the same e-mail through (201 and 409)", async () => {
    const { owner, clientId } = await ownerWithClient();
    const email = freshEmail();
    const responses = await Promise.all([
      owner.api.post(`/api/clients/${clientId}/invites`, { email, role: "user" }),
      owner.api.post(`/api/clients/${clientId}/invites`, { email, role: "admin" }),
    ]);
    expect(responses.map((r) => r.status).sort()).toEqual([201, 409]);
    const loser = responses.find((r) => r.status === 409)!;
    expect(loser.body.message).toBe("Invite already exists for this email");
    const winner = responses.find((r) => r.status === 201)!.body.invites[0];

    const list = await owner.api.get(`/api/clients/${clientId}/invites`);
    expect(list.body.invites.map((i: { inviteId: string }) => i.inviteId)).toEqual([winner.inviteId]);
    expect((await storedItem(keys.inviteEmailLock(clientId, email)))?.inviteId).toBe(winner.inviteId);
    expect(await sentEmails(email)).toHaveLength(1);
  });

  it("refuses new invites (409) once the client is marked for deletion", async () => {
    const { owner, clientId } = await ownerWithClient("Closing");
    const marked = await owner.api.delete(`/api/clients/${clientId}`);
    expect(marked.status).toBe(200);
    const email = freshEmail();
    const response = await owner.api.post(`/api/clients/${clientId}/invites`, { email, role: "user" });
    expect(response.status).toBe(409);
    expect(response.body.message).toEqual(expect.any(String));
    await expectNoInviteStored(owner, clientId, email);
    expect(await sentEmails(email)).toEqual([]);
  });
});

describe("GET /api/clients/{clientId}/invites[/{inviteId}]", () => {
  it("lists pending invites only, paginated", async () => {
    const { owner, clientId } = await ownerWithClient();
    const joiner = await stack.newUser();
    await joinClient(owner, clientId, joiner, "user"); // accepted: no longer pending
    const cancelled = await invite(owner, clientId, freshEmail(), "user");
    await owner.api.delete(`/api/clients/${clientId}/invites/${cancelled.inviteId}`);
    const pending = [
      await invite(owner, clientId, freshEmail(), "user"),
      await invite(owner, clientId, freshEmail(), "admin"),
      await invite(owner, clientId, freshEmail(), "user"),
    ];

    const all = await owner.api.get(`/api/clients/${clientId}/invites`);
    expect(all.status).toBe(200);
    expect(all.body.message).toEqual(expect.any(String));
    expect(all.body.invites.map((i: { inviteId: string }) => i.inviteId).sort()).toEqual(
      pending.map((i) => i.inviteId).sort(),
    );
    expect(all.body.pagination).toEqual({ page: 1, limit: 20, total: 3, pages: 1 });
    for (const item of all.body.invites) {
      expect(item).toMatchObject({
        pKey: "INVITATION",
        sKey: item.inviteId,
        parentId: clientId,
        clientName: "Acme",
      });
    }

    const page2 = await owner.api.get(`/api/clients/${clientId}/invites?page=2&limit=2`);
    expect(page2.status).toBe(200);
    expect(page2.body.invites).toHaveLength(1);
    expect(page2.body.pagination).toEqual({ page: 2, limit: 2, total: 3, pages: 2 });

    const bad = await owner.api.get(`/api/clients/${clientId}/invites?limit=101`);
    expect(bad.status).toBe(400);
    expect(bad.body.fields).toEqual(["limit"]);
  });

  it("gets one invite; 404 for an unknown one or one of another client; role checks as for create", async () => {
    const { owner, clientId } = await ownerWithClient();
    const email = freshEmail();
    const created = await invite(owner, clientId, email, "admin");

    const got = await owner.api.get(`/api/clients/${clientId}/invites/${created.inviteId}`);
    expect(got.status).toBe(200);
    expect(got.body.invites).toEqual([created]);

    const unknown = await owner.api.get(`/api/clients/${clientId}/invites/${UNKNOWN_ID}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ message: "Invite not found" });

    const other = await ownerWithClient("Other");
    const elsewhere = await other.owner.api.get(`/api/clients/${other.clientId}/invites/${created.inviteId}`);
    expect(elsewhere.status).toBe(404);

    const member = await stack.newUser();
    await joinClient(owner, clientId, member, "user");
    expect((await member.api.get(`/api/clients/${clientId}/invites`)).status).toBe(403);
    expect((await member.api.get(`/api/clients/${clientId}/invites/${created.inviteId}`)).status).toBe(403);
    const stranger = await stack.newUser();
    const hidden = await stranger.api.get(`/api/clients/${clientId}/invites/${created.inviteId}`);
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ message: "Client not found" });
    expect((await stranger.api.get(`/api/clients/${clientId}/invites`)).status).toBe(404);
  });

  it("treats an expired invite as gone everywhere, and it no longer blocks a new invite", async () => {
    const { owner, clientId } = await ownerWithClient();
    const invitee = await stack.newUser();
    const old = await invite(owner, clientId, invitee.email, "admin");
    await expireInvite(clientId, old.inviteId, invitee.email);
    // Still in the table (DynamoDB deletes TTL items late) but not pending any more.
    expect(await storedItem(keys.invite(clientId, old.inviteId))).toBeDefined();

    const list = await owner.api.get(`/api/clients/${clientId}/invites`);
    expect(list.body.invites).toEqual([]);
    expect(list.body.pagination.total).toBe(0);
    expect((await owner.api.get(`/api/clients/${clientId}/invites/${old.inviteId}`)).status).toBe(404);
    const mine = await invitee.api.get(`/api/users/${invitee.userId}/invites`);
    expect(mine.body.invites).toEqual([]);
    expect((await invitee.api.get(`/api/users/${invitee.userId}/invites/${old.inviteId}`)).status).toBe(404);
    expect(
      (await owner.api.put(`/api/clients/${clientId}/invites/${old.inviteId}`, { resend: true })).status,
    ).toBe(404);

    const accept = await invitee.api.put(`/api/users/${invitee.userId}/invites/${old.inviteId}`, {
      acceptInvite: true,
    });
    expect(accept.status).toBe(404);
    expect(accept.body).toEqual({ message: "Invite not found" });
    expect(await storedItem(keys.member(clientId, invitee.userId))).toBeUndefined();
    expect(await userClients(invitee.userId)).not.toContain(clientId);
    expect((await storedItem(keys.client(clientId)))?.memberCount).toBe(1);

    const renewed = await invite(owner, clientId, invitee.email, "user");
    expect((await storedItem(keys.inviteEmailLock(clientId, invitee.email)))?.inviteId).toBe(
      renewed.inviteId,
    );
    const relisted = await owner.api.get(`/api/clients/${clientId}/invites`);
    expect(relisted.body.invites.map((i: { inviteId: string }) => i.inviteId)).toEqual([renewed.inviteId]);
    const accepted = await invitee.api.put(`/api/users/${invitee.userId}/invites/${renewed.inviteId}`, {
      acceptInvite: true,
    });
    expect(accepted.status).toBe(200);
    expect((await storedItem(keys.member(clientId, invitee.userId)))?.roles).toEqual(["user"]);
  });
});

describe("PUT /api/clients/{clientId}/invites/{inviteId}", () => {
  it("replaces the roles without re-sending or renewing", async () => {
    const { owner, clientId } = await ownerWithClient();
    const email = freshEmail();
    const created = await invite(owner, clientId, email, "user");

    const response = await owner.api.put(`/api/clients/${clientId}/invites/${created.inviteId}`, {
      roles: ["user", "admin"],
    });
    expect(response.status).toBe(200);
    expect(response.body.message).toEqual(expect.any(String));
    expect(response.body.invites[0]).toMatchObject({
      inviteId: created.inviteId,
      roles: ["admin", "user"],
      TTL: created.TTL,
    });
    const stored = await storedItem(keys.invite(clientId, created.inviteId));
    expect(stored).toMatchObject({ roles: ["admin", "user"], TTL: created.TTL });
    expect(await sentEmails(email)).toHaveLength(1);

    const got = await owner.api.get(`/api/clients/${clientId}/invites/${created.inviteId}`);
    expect(got.body.invites[0].roles).toEqual(["admin", "user"]);
  });

  it("with resend true renews the TTL to now + 7 days (invite and lock) and sends the e-mail again", async () => {
    const { owner, clientId } = await ownerWithClient("Resend Co");
    const email = freshEmail();
    const created = await invite(owner, clientId, email, "user");
    // Six days have passed.
    await setInviteTtl(clientId, created.inviteId, email, nowSeconds() + 86_400);

    const before = nowSeconds();
    const response = await owner.api.put(`/api/clients/${clientId}/invites/${created.inviteId}`, {
      resend: true,
    });
    const after = nowSeconds();
    expect(response.status).toBe(200);
    const ttl = response.body.invites[0].TTL as number;
    expect(ttl).toBeGreaterThanOrEqual(before + WEEK_SECONDS - 2);
    expect(ttl).toBeLessThanOrEqual(after + WEEK_SECONDS + 2);
    expect(response.body.invites[0].roles).toEqual(["user"]);
    expect((await storedItem(keys.invite(clientId, created.inviteId)))?.TTL).toBe(ttl);
    expect((await storedItem(keys.inviteEmailLock(clientId, email)))?.TTL).toBe(ttl);

    const mails = await inviteEmails(email, created.inviteId);
    expect(mails).toHaveLength(2);
    expect(mails[1]!.subject).toBe("You are invited to join Resend Co");
    expect(mails[1]!.destinations.ToAddresses).toEqual([email]);

    const both = await owner.api.put(`/api/clients/${clientId}/invites/${created.inviteId}`, {
      roles: ["admin"],
      resend: true,
    });
    expect(both.status).toBe(200);
    expect(both.body.invites[0].roles).toEqual(["admin"]);
    expect((await storedItem(keys.invite(clientId, created.inviteId)))?.roles).toEqual(["admin"]);
    expect(await inviteEmails(email, created.inviteId)).toHaveLength(3);
  });

  it.each([
    [{}, ["body"]],
    [{ resend: false }, ["body"]],
    [{ resend: "yes" }, ["resend"]],
    [{ roles: [] }, ["roles"]],
    [{ roles: "admin" }, ["roles"]],
    [{ roles: ["superuser"] }, ["roles.0"]],
    [{ roles: ["user"], email: "x@example.test" }, ["email"]],
  ])("rejects %j with 400 naming %j and changes nothing", async (body, fields) => {
    const { owner, clientId } = await ownerWithClient();
    const email = freshEmail();
    const created = await invite(owner, clientId, email, "user");
    const response = await owner.api.put(`/api/clients/${clientId}/invites/${created.inviteId}`, body);
    expect(response.status).toBe(400);
    expect(response.body.message).toBe("Input failed data validation");
    expect(response.body.fields).toEqual(fields);
    expect(await storedItem(keys.invite(clientId, created.inviteId))).toMatchObject({
      roles: ["user"],
      TTL: created.TTL,
    });
    expect(await sentEmails(email)).toHaveLength(1);
  });

  it("answers 404 for an unknown invite, 403 for a plain user and for an admin granting owner", async () => {
    const { owner, clientId } = await ownerWithClient();
    const unknown = await owner.api.put(`/api/clients/${clientId}/invites/${UNKNOWN_ID}`, {
      roles: ["user"],
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ message: "Invite not found" });
    expect(await storedItem(keys.invite(clientId, UNKNOWN_ID))).toBeUndefined();

    const created = await invite(owner, clientId, freshEmail(), "user");
    const admin = await stack.newUser();
    await joinClient(owner, clientId, admin, "admin");
    const toOwner = await admin.api.put(`/api/clients/${clientId}/invites/${created.inviteId}`, {
      roles: ["owner"],
    });
    expect(toOwner.status).toBe(403);
    const member = await stack.newUser();
    await joinClient(owner, clientId, member, "user");
    const asUser = await member.api.put(`/api/clients/${clientId}/invites/${created.inviteId}`, {
      resend: true,
    });
    expect(asUser.status).toBe(403);
    expect((await storedItem(keys.invite(clientId, created.inviteId)))?.roles).toEqual(["user"]);
  });
});

describe("DELETE /api/clients/{clientId}/invites/{inviteId} (cancel)", () => {
  it("removes the invite and its lock; the invitee then gets 404", async () => {
    const { owner, clientId } = await ownerWithClient();
    const invitee = await stack.newUser();
    const created = await invite(owner, clientId, invitee.email, "user");

    const member = await stack.newUser();
    await joinClient(owner, clientId, member, "user");
    expect((await member.api.delete(`/api/clients/${clientId}/invites/${created.inviteId}`)).status).toBe(
      403,
    );
    expect(await storedItem(keys.invite(clientId, created.inviteId))).toBeDefined();

    const response = await owner.api.delete(`/api/clients/${clientId}/invites/${created.inviteId}`);
    expect(response.status).toBe(200);
    expect(response.body.message).toEqual(expect.any(String));
    await expectInviteGone(clientId, created.inviteId, invitee.email);

    const path = `/api/users/${invitee.userId}/invites/${created.inviteId}`;
    expect((await invitee.api.get(path)).status).toBe(404);
    expect((await invitee.api.put(path, { acceptInvite: true })).status).toBe(404);
    expect(await storedItem(keys.member(clientId, invitee.userId))).toBeUndefined();
    expect((await invitee.api.get(`/api/users/${invitee.userId}/invites`)).body.invites).toEqual([]);
    expect((await owner.api.get(`/api/clients/${clientId}/invites`)).body.invites).toEqual([]);
    const again = await owner.api.delete(`/api/clients/${clientId}/invites/${created.inviteId}`);
    expect(again.status).toBe(404);
  });
});

describe("the invitee's side: /api/users/{userId}/invites", () => {
  it("lists only the invites addressed to the caller's e-mail, across clients, paginated", async () => {
    const a = await ownerWithClient("Alpha");
    const b = await ownerWithClient("Beta");
    const alice = await stack.newUser();
    const bob = await stack.newUser();
    const toAlice = [
      await invite(a.owner, a.clientId, alice.email, "admin"),
      await invite(b.owner, b.clientId, alice.email.toUpperCase(), "user"),
    ];
    const toBob = await invite(a.owner, a.clientId, bob.email, "user");

    const mine = await alice.api.get(`/api/users/${alice.userId}/invites`);
    expect(mine.status).toBe(200);
    expect(mine.body.message).toEqual(expect.any(String));
    expect(mine.body.invites.map((i: { inviteId: string }) => i.inviteId).sort()).toEqual(
      toAlice.map((i) => i.inviteId).sort(),
    );
    expect(mine.body.pagination).toEqual({ page: 1, limit: 20, total: 2, pages: 1 });
    const alpha = mine.body.invites.find((i: { parentId: string }) => i.parentId === a.clientId);
    expect(alpha).toMatchObject({
      inviteId: toAlice[0]!.inviteId,
      clientName: "Alpha",
      pKey: "INVITATION",
      sKey: toAlice[0]!.inviteId,
      roles: ["admin"],
      userEmail: alice.email,
      TTL: toAlice[0]!.TTL,
    });

    const page = await alice.api.get(`/api/users/${alice.userId}/invites?page=2&limit=1`);
    expect(page.body.invites).toHaveLength(1);
    expect(page.body.pagination).toEqual({ page: 2, limit: 1, total: 2, pages: 2 });

    const bobs = await bob.api.get(`/api/users/${bob.userId}/invites`);
    expect(bobs.body.invites.map((i: { inviteId: string }) => i.inviteId)).toEqual([toBob.inviteId]);
  });

  it("gets one's own invite; someone else's is 404 to see, accept or reject, and stays pending", async () => {
    const { owner, clientId } = await ownerWithClient();
    const alice = await stack.newUser();
    const mallory = await stack.newUser();
    const created = await invite(owner, clientId, alice.email, "admin");

    const got = await alice.api.get(`/api/users/${alice.userId}/invites/${created.inviteId}`);
    expect(got.status).toBe(200);
    expect(got.body.invites).toEqual([created]);

    const path = `/api/users/${mallory.userId}/invites/${created.inviteId}`;
    const seen = await mallory.api.get(path);
    expect(seen.status).toBe(404);
    expect(seen.body).toEqual({ message: "Invite not found" });
    expect((await mallory.api.put(path, { acceptInvite: true })).status).toBe(404);
    expect((await mallory.api.put(path, { acceptInvite: false })).status).toBe(404);
    expect((await mallory.api.delete(path)).status).toBe(404);
    expect((await mallory.api.get(`/api/users/${mallory.userId}/invites`)).body.invites).toEqual([]);

    expect(await storedItem(keys.member(clientId, mallory.userId))).toBeUndefined();
    expect(await userClients(mallory.userId)).not.toContain(clientId);
    expect(await storedItem(keys.invite(clientId, created.inviteId))).toBeDefined();
    expect((await storedItem(keys.inviteEmailLock(clientId, alice.email)))?.inviteId).toBe(created.inviteId);
  });

  it("refuses another user's path with 403", async () => {
    const { owner, clientId } = await ownerWithClient();
    const alice = await stack.newUser();
    const mallory = await stack.newUser();
    const created = await invite(owner, clientId, alice.email, "user");
    const base = `/api/users/${alice.userId}/invites`;
    for (const response of [
      await mallory.api.get(base),
      await mallory.api.get(`${base}/${created.inviteId}`),
      await mallory.api.put(`${base}/${created.inviteId}`, { acceptInvite: true }),
      await mallory.api.delete(`${base}/${created.inviteId}`),
    ]) {
      expect(response.status).toBe(403);
      expect(response.body.message).toMatch(/^Forbidden/);
    }
    expect(await storedItem(keys.invite(clientId, created.inviteId))).toBeDefined();
    expect(await storedItem(keys.member(clientId, mallory.userId))).toBeUndefined();
  });

  it("answers POST with 405 pointing to the client invite route", async () => {
    const user = await stack.newUser();
    const response = await user.api.post(`/api/users/${user.userId}/invites`, {
      email: freshEmail(),
      role: "user",
    });
    expect(response.status).toBe(405);
    expect(response.body.message).toContain("POST /api/clients/{clientId}/invites");
    expect(response.headers.get("allow")).toBe("GET");
  });
});

describe("accepting: PUT /api/users/{userId}/invites/{inviteId}", () => {
  it("makes the invitee a member with the invite roles, updating counts, userClients and removing the invite", async () => {
    const { owner, clientId } = await ownerWithClient("Joinable");
    const invitee = await stack.newUser();
    const created = await invite(owner, clientId, invitee.email, "user");

    const response = await invitee.api.put(`/api/users/${invitee.userId}/invites/${created.inviteId}`, {
      acceptInvite: true,
    });
    expect(response.status).toBe(200);
    expect(response.body.message).toBe("Invite accepted");

    expect(await storedItem(keys.member(clientId, invitee.userId))).toMatchObject({
      clientId,
      userId: invitee.userId,
      roles: ["user"],
    });
    expect(await storedItem(keys.client(clientId))).toMatchObject({
      memberCount: 2,
      adminCount: 1,
      ownerCount: 1,
    });
    expect(await userClients(invitee.userId)).toContain(clientId);
    await expectInviteGone(clientId, created.inviteId, invitee.email);

    const members = await owner.api.get(`/api/clients/${clientId}/members`);
    expect(members.status).toBe(200);
    expect(members.body.members).toContainEqual(
      expect.objectContaining({ userId: invitee.userId, roles: ["user"], userEmail: invitee.email }),
    );
    const clients = await invitee.api.get("/api/clients");
    expect(clients.body.clients.map((c: { clientId: string }) => c.clientId)).toContain(clientId);

    const notes = await owner.api.get(`/api/clients/${clientId}/notifications`);
    expect(notes.status).toBe(200);
    expect(notes.body.notifications).toContainEqual(
      expect.objectContaining({ type: "invitation", message: expect.stringContaining(invitee.email) }),
    );

    const again = await invitee.api.put(`/api/users/${invitee.userId}/invites/${created.inviteId}`, {
      acceptInvite: true,
    });
    expect(again.status).toBe(404);
    expect((await storedItem(keys.client(clientId)))?.memberCount).toBe(2);
    expect((await invitee.api.get(`/api/users/${invitee.userId}/invites`)).body.invites).toEqual([]);
    expect((await owner.api.get(`/api/clients/${clientId}/invites`)).body.invites).toEqual([]);
  });

  it("counts an accepted admin in adminCount and an accepted owner in ownerCount", async () => {
    const { owner, clientId } = await ownerWithClient();
    const admin = await stack.newUser();
    const coOwner = await stack.newUser();
    await joinClient(owner, clientId, admin, "admin");
    expect(await storedItem(keys.client(clientId))).toMatchObject({
      memberCount: 2,
      adminCount: 2,
      ownerCount: 1,
    });
    await joinClient(owner, clientId, coOwner, "owner");
    expect(await storedItem(keys.client(clientId))).toMatchObject({
      memberCount: 3,
      adminCount: 2,
      ownerCount: 2,
    });
    expect((await storedItem(keys.member(clientId, admin.userId)))?.roles).toEqual(["admin"]);
    expect((await storedItem(keys.member(clientId, coOwner.userId)))?.roles).toEqual(["owner"]);
  });

  it("with acceptInvite false rejects the invite: gone, and no membership", async () => {
    const { owner, clientId } = await ownerWithClient();
    const invitee = await stack.newUser();
    const created = await invite(owner, clientId, invitee.email, "admin");
    const response = await invitee.api.put(`/api/users/${invitee.userId}/invites/${created.inviteId}`, {
      acceptInvite: false,
    });
    expect(response.status).toBe(200);
    expect(response.body.message).toBe("Invite rejected");
    await expectInviteGone(clientId, created.inviteId, invitee.email);
    expect(await storedItem(keys.member(clientId, invitee.userId))).toBeUndefined();
    expect(await userClients(invitee.userId)).not.toContain(clientId);
    expect(await storedItem(keys.client(clientId))).toMatchObject({ memberCount: 1, adminCount: 1 });
    expect((await owner.api.get(`/api/clients/${clientId}/invites`)).body.invites).toEqual([]);
  });

  it.each([
    [{}, ["acceptInvite"]],
    [{ acceptInvite: "true" }, ["acceptInvite"]],
    [{ acceptInvite: 1 }, ["acceptInvite"]],
    [{ acceptInvite: true, roles: ["owner"] }, ["roles"]],
  ])("rejects %j with 400 naming %j; the invite stays pending", async (body, fields) => {
    const { owner, clientId } = await ownerWithClient();
    const invitee = await stack.newUser();
    const created = await invite(owner, clientId, invitee.email, "user");
    const response = await invitee.api.put(`/api/users/${invitee.userId}/invites/${created.inviteId}`, body);
    expect(response.status).toBe(400);
    expect(response.body.message).toBe("Input failed data validation");
    expect(response.body.fields).toEqual(fields);
    expect(await storedItem(keys.invite(clientId, created.inviteId))).toBeDefined();
    expect(await storedItem(keys.member(clientId, invitee.userId))).toBeUndefined();
  });

  it("cannot join a client that was marked for deletion after the invite (409)", async () => {
    const { owner, clientId } = await ownerWithClient();
    const invitee = await stack.newUser();
    const created = await invite(owner, clientId, invitee.email, "user");
    expect((await owner.api.delete(`/api/clients/${clientId}`)).status).toBe(200);
    const response = await invitee.api.put(`/api/users/${invitee.userId}/invites/${created.inviteId}`, {
      acceptInvite: true,
    });
    expect(response.status).toBe(409);
    expect(await storedItem(keys.member(clientId, invitee.userId))).toBeUndefined();
    expect(await userClients(invitee.userId)).not.toContain(clientId);
    expect((await storedItem(keys.client(clientId)))?.memberCount).toBe(1);
  });
});

describe("the devops and reader roles", () => {
  it.each(["reader", "devops"] as const)(
    "an admin invites a %s, who accepts and joins with that role; neither may manage invites",
    async (role) => {
      const { owner, clientId } = await ownerWithClient("Roles Co");
      const admin = await stack.newUser();
      await joinClient(owner, clientId, admin, "admin");
      const invitee = await stack.newUser();

      const created = await invite(admin, clientId, invitee.email, role);
      expect(created.roles).toEqual([role]);
      expect((await storedItem(keys.invite(clientId, created.inviteId)))?.roles).toEqual([role]);
      const mine = await invitee.api.get(`/api/users/${invitee.userId}/invites/${created.inviteId}`);
      expect(mine.status).toBe(200);
      expect(mine.body.invites[0].roles).toEqual([role]);

      const accepted = await invitee.api.put(`/api/users/${invitee.userId}/invites/${created.inviteId}`, {
        acceptInvite: true,
      });
      expect(accepted.status).toBe(200);
      expect(accepted.body).toEqual({ message: "Invite accepted", clientId, roles: [role] });
      expect((await storedItem(keys.member(clientId, invitee.userId)))?.roles).toEqual([role]);
      expect(await storedItem(keys.client(clientId))).toMatchObject({ memberCount: 3, adminCount: 2 });
      expect(await userClients(invitee.userId)).toContain(clientId);
      await expectInviteGone(clientId, created.inviteId, invitee.email);

      // Managing invites needs admin: the new member may neither list, see nor make them.
      const other = await invite(admin, clientId, freshEmail(), "user");
      for (const response of [
        await invitee.api.get(`/api/clients/${clientId}/invites`),
        await invitee.api.get(`/api/clients/${clientId}/invites/${other.inviteId}`),
        await invitee.api.post(`/api/clients/${clientId}/invites`, { email: freshEmail(), role: "reader" }),
        await invitee.api.put(`/api/clients/${clientId}/invites/${other.inviteId}`, { resend: true }),
        await invitee.api.delete(`/api/clients/${clientId}/invites/${other.inviteId}`),
      ]) {
        expect(response.status).toBe(403);
        expect(response.body).toEqual({ message: "Forbidden: requires the admin role" });
      }
      expect(await storedItem(keys.invite(clientId, other.inviteId))).toBeDefined();

      // Every member reads the client's notifications, among them the acceptance.
      const notes = await invitee.api.get(`/api/clients/${clientId}/notifications`);
      expect(notes.status).toBe(200);
      expect(notes.body.notifications).toContainEqual(
        expect.objectContaining({ type: "invitation", message: expect.stringContaining(invitee.email) }),
      );
    },
  );

  it("an admin may change an invite's roles to devops and reader", async () => {
    const { owner, clientId } = await ownerWithClient();
    const created = await invite(owner, clientId, freshEmail(), "user");
    const response = await owner.api.put(`/api/clients/${clientId}/invites/${created.inviteId}`, {
      roles: ["reader", "devops"],
    });
    expect(response.status).toBe(200);
    expect(response.body.invites[0].roles).toEqual(["devops", "reader"]);
  });
});

describe("rejecting: DELETE /api/users/{userId}/invites/{inviteId}", () => {
  it("removes the invite and its lock; a new invite to the same address can then be made", async () => {
    const { owner, clientId } = await ownerWithClient();
    const invitee = await stack.newUser();
    const created = await invite(owner, clientId, invitee.email, "user");

    const response = await invitee.api.delete(`/api/users/${invitee.userId}/invites/${created.inviteId}`);
    expect(response.status).toBe(200);
    expect(response.body.message).toBe("Invite rejected");
    await expectInviteGone(clientId, created.inviteId, invitee.email);
    expect(await storedItem(keys.member(clientId, invitee.userId))).toBeUndefined();
    expect((await invitee.api.get(`/api/users/${invitee.userId}/invites`)).body.invites).toEqual([]);
    expect((await owner.api.get(`/api/clients/${clientId}/invites`)).body.invites).toEqual([]);

    const again = await invitee.api.delete(`/api/users/${invitee.userId}/invites/${created.inviteId}`);
    expect(again.status).toBe(404);
    await invite(owner, clientId, invitee.email, "user");
  });
});
