/**
 * The MSP's team (spec 2.3a, 3, 4.14, 7) over real HTTP against the local stack: MSP invites
 * (create, duplicate, roles and expiry, cancel), their acceptance and rejection on the invitee's
 * side (/api/users/{userId}/invites), and the members (list without phone, roles, the last
 * msp_owner and msp_admin rules, removal updating userMsps).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { createMsp } from "#lib/domain/msps.ts";
import { sentEmails } from "../support/emulator.ts";
import { startTestStack, storedItem, type TestStack, type TestUser } from "../support/stack.ts";

const DAY_MS = 86_400_000;

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

interface Msp {
  mspId: string;
  owner: TestUser;
}

async function newMsp(): Promise<Msp> {
  const owner = await stack.newUser();
  const { msp } = await createMsp({ name: `MSP ${randomUUID().slice(0, 8)}`, ownerUserId: owner.userId });
  return { mspId: msp.mspId, owner };
}

const invitesPath = (msp: Msp, inviteId?: string) =>
  `/api/msps/${msp.mspId}/invites${inviteId ? `/${inviteId}` : ""}`;
const membersPath = (msp: Msp, userId?: string) =>
  `/api/msps/${msp.mspId}/members${userId ? `/${userId}` : ""}`;

async function invite(msp: Msp, email: string, roles: string[], by: TestUser = msp.owner) {
  const response = await by.api.post(invitesPath(msp), { userEmail: email, roles });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.invites[0] as { inviteId: string; inviteExpiry: string; inviteCreated: string };
}

async function join(msp: Msp, user: TestUser, roles: string[]) {
  const { inviteId } = await invite(msp, user.email, roles);
  const accepted = await user.api.put(`/api/users/${user.userId}/invites/${inviteId}`, {
    acceptInvite: true,
  });
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
}

async function userMsps(user: TestUser): Promise<string[]> {
  const item = await storedItem(keys.user(user.userId));
  return [...((item?.userMsps as Set<string> | undefined) ?? [])];
}

describe("MSP invites", () => {
  it("POST {userEmail, roles} answers the 2.3a fields, expires in 7 days, e-mails and notifies the invitee", async () => {
    const msp = await newMsp();
    const invitee = await stack.newUser();
    const before = Date.now();
    const response = await msp.owner.api.post(invitesPath(msp), {
      userEmail: invitee.email.toUpperCase(),
      roles: ["msp_user", "msp_reader", "msp_user"],
    });
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      message: "Invite created and sent",
      invites: [
        {
          inviteId: expect.any(String),
          userEmail: invitee.email,
          roles: ["msp_user", "msp_reader"],
          inviteExpiry: expect.any(String),
          inviteCreated: expect.any(String),
          inviteUpdated: expect.any(String),
        },
      ],
    });
    const { inviteId, inviteExpiry } = response.body.invites[0];
    const expiry = Date.parse(inviteExpiry);
    expect(expiry).toBeGreaterThanOrEqual(before + 7 * DAY_MS - 2000);
    expect(expiry).toBeLessThanOrEqual(Date.now() + 7 * DAY_MS + 1000);
    const mails = (await sentEmails(invitee.email)).filter((m) => m.body.includes(`/invites/${inviteId}`));
    expect(mails).toHaveLength(1);
    const inbox = await invitee.api.get(`/api/users/${invitee.userId}/notifications`);
    expect(inbox.body.notifications.map((n: { type: string }) => n.type)).toContain("invitation");
    const list = await msp.owner.api.get(invitesPath(msp));
    expect(list.body.invites.map((i: { inviteId: string }) => i.inviteId)).toEqual([inviteId]);
  });

  it("a duplicate e-mail is 409; roles are required; only an msp_owner invites an msp_owner", async () => {
    const msp = await newMsp();
    const admin = await stack.newUser();
    await join(msp, admin, ["msp_admin"]);
    const email = `dup-${randomUUID()}@example.test`;
    await invite(msp, email, ["msp_reader"]);
    const dup = await msp.owner.api.post(invitesPath(msp), { userEmail: email, roles: ["msp_user"] });
    expect(dup.status).toBe(409);
    expect(dup.body.message).toBe("Invite already exists for this email");
    for (const body of [{ userEmail: "x@example.test" }, { userEmail: "x@example.test", roles: [] }]) {
      const response = await msp.owner.api.post(invitesPath(msp), body);
      expect(response.status).toBe(400);
      expect(response.body.message).toBe("Roles required");
    }
    const unknown = await msp.owner.api.post(invitesPath(msp), {
      userEmail: "x@example.test",
      roles: ["admin"],
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.fields).toEqual(["roles.0"]);
    const owner = await admin.api.post(invitesPath(msp), {
      userEmail: "o@example.test",
      roles: ["msp_owner"],
    });
    expect(owner.status).toBe(403);
    expect(owner.body.message).toBe("Forbidden");
    const member = await msp.owner.api.post(invitesPath(msp), {
      userEmail: admin.email,
      roles: ["msp_user"],
    });
    expect(member.status).toBe(409);
  });

  it("PUT replaces the roles and extends the expiry by 14 days from the current expiry; roles required", async () => {
    const msp = await newMsp();
    const made = await invite(msp, `put-${randomUUID()}@example.test`, ["msp_reader"]);
    const updated = await msp.owner.api.put(invitesPath(msp, made.inviteId), { roles: ["msp_admin"] });
    expect(updated.status).toBe(200);
    expect(updated.body.invites).toEqual([
      {
        inviteId: made.inviteId,
        userEmail: expect.any(String),
        roles: ["msp_admin"],
        inviteExpiry: new Date(Date.parse(made.inviteExpiry) + 14 * DAY_MS).toISOString(),
        inviteCreated: made.inviteCreated,
        inviteUpdated: expect.any(String),
      },
    ]);
    const again = await msp.owner.api.put(invitesPath(msp, made.inviteId), { roles: ["msp_user"] });
    expect(again.body.invites[0].inviteExpiry).toBe(
      new Date(Date.parse(made.inviteExpiry) + 28 * DAY_MS).toISOString(),
    );
    const none = await msp.owner.api.put(invitesPath(msp, made.inviteId), {});
    expect(none.status).toBe(400);
    expect(none.body.message).toBe("Roles required");
    expect((await msp.owner.api.put(invitesPath(msp, randomUUID()), { roles: ["msp_user"] })).status).toBe(
      404,
    );
  });

  it("DELETE cancels: the invitee can no longer see or accept it, and the address can be invited again", async () => {
    const msp = await newMsp();
    const invitee = await stack.newUser();
    const { inviteId } = await invite(msp, invitee.email, ["msp_user"]);
    const cancelled = await msp.owner.api.delete(invitesPath(msp, inviteId));
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toEqual({ message: "Invite cancelled" });
    expect((await invitee.api.get(`/api/users/${invitee.userId}/invites/${inviteId}`)).status).toBe(404);
    const accept = await invitee.api.put(`/api/users/${invitee.userId}/invites/${inviteId}`, {
      acceptInvite: true,
    });
    expect(accept.status).toBe(404);
    await invite(msp, invitee.email, ["msp_user"]);
  });

  it("the invitee lists, gets and accepts it: they join with the roles and userMsps lists the MSP", async () => {
    const msp = await newMsp();
    const invitee = await stack.newUser();
    const { inviteId } = await invite(msp, invitee.email, ["msp_admin"]);
    const list = await invitee.api.get(`/api/users/${invitee.userId}/invites`);
    expect(list.status).toBe(200);
    const mine = {
      inviteType: "msp",
      inviteId,
      mspId: msp.mspId,
      mspName: expect.stringMatching(/^MSP /),
      userEmail: invitee.email,
      roles: ["msp_admin"],
      inviteExpiry: expect.any(String),
      inviteCreated: expect.any(String),
      inviteUpdated: expect.any(String),
    };
    expect(list.body.invites).toEqual([mine]);
    expect((await invitee.api.get(`/api/users/${invitee.userId}/invites/${inviteId}`)).body.invites).toEqual([
      mine,
    ]);
    // someone else cannot see or answer it
    const other = await stack.newUser();
    expect((await other.api.get(`/api/users/${other.userId}/invites/${inviteId}`)).status).toBe(404);
    const accepted = await invitee.api.put(`/api/users/${invitee.userId}/invites/${inviteId}`, {
      acceptInvite: true,
    });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toEqual({ message: "Invite accepted", mspId: msp.mspId, roles: ["msp_admin"] });
    expect(await storedItem(keys.mspMember(msp.mspId, invitee.userId))).toMatchObject({
      roles: ["msp_admin"],
    });
    expect(await userMsps(invitee)).toEqual([msp.mspId]);
    expect((await invitee.api.get(membersPath(msp))).status).toBe(200);
    expect(await storedItem(keys.mspInvite(msp.mspId, inviteId))).toBeUndefined();
    expect(await storedItem(keys.mspInviteEmailLock(msp.mspId, invitee.email))).toBeUndefined();
  });

  it("the invitee rejects it (PUT false or DELETE): gone, no membership", async () => {
    const msp = await newMsp();
    const invitee = await stack.newUser();
    const first = await invite(msp, invitee.email, ["msp_user"]);
    const rejected = await invitee.api.put(`/api/users/${invitee.userId}/invites/${first.inviteId}`, {
      acceptInvite: false,
    });
    expect(rejected.body).toEqual({ message: "Invite rejected" });
    const second = await invite(msp, invitee.email, ["msp_user"]);
    expect((await invitee.api.delete(`/api/users/${invitee.userId}/invites/${second.inviteId}`)).status).toBe(
      200,
    );
    expect((await msp.owner.api.get(invitesPath(msp))).body.invites).toEqual([]);
    expect(await userMsps(invitee)).toEqual([]);
  });

  it("invites are msp_admin's: msp_user gets 403 Forbidden, a non-member 404", async () => {
    const msp = await newMsp();
    const user = await stack.newUser();
    await join(msp, user, ["msp_user"]);
    for (const response of [
      await user.api.get(invitesPath(msp)),
      await user.api.post(invitesPath(msp), { userEmail: "a@example.test", roles: ["msp_user"] }),
    ]) {
      expect(response.status).toBe(403);
      expect(response.body.message).toBe("Forbidden");
    }
    expect((await (await stack.newUser()).api.get(invitesPath(msp))).status).toBe(404);
  });
});

describe("MSP members", () => {
  it("the list and one member: MSP roles and contact fields, no phone; unknown is `Member not found in MSP`", async () => {
    const msp = await newMsp();
    const reader = await stack.newUser({ firstName: "Rita", lastName: "Reader" });
    await join(msp, reader, ["msp_reader"]);
    const list = await reader.api.get(membersPath(msp));
    expect(list.status).toBe(200);
    const readerShape = {
      userId: reader.userId,
      roles: ["msp_reader"],
      userEmail: reader.email,
      userFirstName: "Rita",
      userLastName: "Reader",
      userCreated: expect.any(String),
      userUpdated: expect.any(String),
    };
    expect(list.body.members).toHaveLength(2);
    expect(list.body.members).toContainEqual(readerShape);
    for (const member of list.body.members) expect(member).not.toHaveProperty("userPhone");
    expect((await reader.api.get(membersPath(msp, reader.userId))).body.members).toEqual([readerShape]);
    const unknown = await reader.api.get(membersPath(msp, randomUUID()));
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe("Member not found in MSP");
  });

  it("PUT takes MSP roles only and answers {userId, roles}; roles required; msp_user may not", async () => {
    const msp = await newMsp();
    const [admin, user] = [await stack.newUser(), await stack.newUser()];
    await join(msp, admin, ["msp_admin"]);
    await join(msp, user, ["msp_user"]);
    const put = await admin.api.put(membersPath(msp, user.userId), { roles: ["msp_reader", "msp_user"] });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      message: "Member updated",
      members: [{ userId: user.userId, roles: ["msp_user", "msp_reader"] }],
    });
    const client = await admin.api.put(membersPath(msp, user.userId), { roles: ["admin"] });
    expect(client.status).toBe(400);
    expect(client.body.fields).toEqual(["roles.0"]);
    const none = await admin.api.put(membersPath(msp, user.userId), {});
    expect(none.body.message).toBe("Roles required");
    const byUser = await user.api.put(membersPath(msp, admin.userId), { roles: ["msp_reader"] });
    expect(byUser.status).toBe(403);
    expect(byUser.body.message).toBe("Forbidden");
    expect((await admin.api.put(membersPath(msp, randomUUID()), { roles: ["msp_user"] })).status).toBe(404);
    // msp_owner is granted and taken only by an msp_owner
    expect((await admin.api.put(membersPath(msp, user.userId), { roles: ["msp_owner"] })).status).toBe(403);
    expect((await admin.api.put(membersPath(msp, msp.owner.userId), { roles: ["msp_admin"] })).status).toBe(
      403,
    );
  });

  it("the last msp_owner and the last msp_admin keep their role and cannot be removed", async () => {
    const msp = await newMsp();
    const admin = await stack.newUser();
    await join(msp, admin, ["msp_admin"]);
    const lastOwner = await msp.owner.api.put(membersPath(msp, msp.owner.userId), { roles: ["msp_admin"] });
    expect(lastOwner.status).toBe(400);
    expect(lastOwner.body.message).toBe("Cannot remove last msp_owner");
    const removeOwner = await msp.owner.api.delete(membersPath(msp, msp.owner.userId));
    expect(removeOwner.status).toBe(400);
    expect(removeOwner.body.message).toBe("Cannot remove last msp_owner");
    const lastAdmin = await admin.api.put(membersPath(msp, admin.userId), { roles: ["msp_user"] });
    expect(lastAdmin.status).toBe(400);
    expect(lastAdmin.body.message).toBe("Cannot remove last msp_admin");
    const removeAdmin = await msp.owner.api.delete(membersPath(msp, admin.userId));
    expect(removeAdmin.status).toBe(400);
    expect(removeAdmin.body.message).toBe("Cannot remove last msp_admin");
    // with a second owner, the first may step down
    const second = await stack.newUser();
    await join(msp, second, ["msp_owner"]);
    expect(
      (await msp.owner.api.put(membersPath(msp, msp.owner.userId), { roles: ["msp_user"] })).status,
    ).toBe(200);
  });

  it("DELETE removes the member and the MSP from the user's userMsps", async () => {
    const msp = await newMsp();
    const [admin, user] = [await stack.newUser(), await stack.newUser()];
    await join(msp, admin, ["msp_admin"]);
    await join(msp, user, ["msp_user"]);
    expect(await userMsps(user)).toEqual([msp.mspId]);
    const removed = await admin.api.delete(membersPath(msp, user.userId));
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ message: "Member removed" });
    expect(await userMsps(user)).toEqual([]);
    expect(await storedItem(keys.mspMember(msp.mspId, user.userId))).toBeUndefined();
    expect((await user.api.get(membersPath(msp))).status).toBe(404);
    expect((await admin.api.delete(membersPath(msp, user.userId))).body.message).toBe(
      "Member not found in MSP",
    );
    expect((await admin.api.delete(membersPath(msp, msp.owner.userId))).status).toBe(403);
  });
});
