/** Members and memberships (spec 4.2) over real HTTP against the local stack. */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { getConfig } from "#lib/config.ts";
import { CLIENT_SK, keys } from "#lib/db/keys.ts";
import { queryPartition } from "#lib/db/store.ts";
import {
  createClientFor,
  joinClient,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const LAST_ADMIN_DELETE = "Cannot delete member, last remaining admin";
const VALIDATION = "Input failed data validation";
const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

interface Org {
  clientId: string;
  /** The creator: roles ["owner", "admin"]. */
  owner: TestUser;
}

async function newOrg(name = "Acme"): Promise<Org> {
  const owner = await stack.newUser();
  return { clientId: await createClientFor(owner, name), owner };
}

/** A new user who joined `org` through the invite flow with `role`. */
async function joined(org: Org, role: "owner" | "admin" | "user", inviter: TestUser = org.owner) {
  const user = await stack.newUser();
  await joinClient(inviter, org.clientId, user, role);
  return user;
}

/**
 * The owner keeps only the owner role, so the org's admins are exactly the two invited ones
 * (stored adminCount 2): the setting of the last-admin and concurrency tests.
 */
async function orgWithTwoPlainAdmins() {
  const org = await newOrg("Two admins");
  const a = await joined(org, "admin");
  const b = await joined(org, "admin");
  const dropped = await org.owner.api.put(`/api/clients/${org.clientId}/members/${org.owner.userId}`, {
    roles: ["owner"],
  });
  expect(dropped.status).toBe(200);
  expect(await storedRoles(org.clientId, org.owner)).toEqual(["owner"]);
  expect(await storedCounts(org.clientId)).toEqual({ memberCount: 3, adminCount: 2, ownerCount: 1 });
  return { org, a, b };
}

const membersPath = (clientId: string, userId?: string) =>
  `/api/clients/${clientId}/members${userId ? `/${userId}` : ""}`;
const membershipsPath = (user: TestUser, clientId?: string) =>
  `/api/users/${user.userId}/memberships${clientId ? `/${clientId}` : ""}`;

async function storedRoles(clientId: string, user: TestUser): Promise<string[] | undefined> {
  return (await storedItem(keys.member(clientId, user.userId)))?.roles as string[] | undefined;
}

async function storedCounts(clientId: string) {
  const client = await storedItem(keys.client(clientId));
  return {
    memberCount: Number(client?.memberCount),
    adminCount: Number(client?.adminCount),
    ownerCount: Number(client?.ownerCount),
  };
}

async function storedUserClients(user: TestUser): Promise<string[]> {
  const item = await storedItem(keys.user(user.userId));
  return [...((item?.userClients as Set<string> | undefined) ?? [])];
}

/**
 * The stored counts agree with the stored member items, and every member's user lists the client:
 * the invariants every membership transaction keeps. Returns the member items' roles by user id.
 */
async function expectConsistentState(clientId: string): Promise<Map<string, string[]>> {
  const items = await queryPartition(keys.clientPartition(clientId), { sKeyPrefix: CLIENT_SK.memberPrefix });
  const roles = new Map(items.map((item) => [String(item.userId), item.roles as string[]]));
  const all = [...roles.values()];
  expect(await storedCounts(clientId)).toEqual({
    memberCount: all.length,
    adminCount: all.filter((r) => r.includes("admin")).length,
    ownerCount: all.filter((r) => r.includes("owner")).length,
  });
  for (const userId of roles.keys()) {
    const user = await storedItem(keys.user(userId));
    expect([...((user?.userClients as Set<string> | undefined) ?? [])]).toContain(clientId);
  }
  return roles;
}

/** The API's member shape (spec 2.2), exactly. */
const memberShape = (user: TestUser, roles: string[], names?: { first: string; last: string }) => ({
  userId: user.userId,
  roles,
  userEmail: user.email,
  userFirstName: names?.first ?? expect.any(String),
  userLastName: names?.last ?? expect.any(String),
  userPhone: "",
  userCreated: expect.any(String),
  userUpdated: expect.any(String),
});

/**
 * Orders a race deterministically: the first TransactWriteItems (on the shared SDK client the
 * in-process handlers use) whose input mentions `marker` waits until `during` has finished.
 */
function beforeTransactionMentioning(marker: string, during: () => Promise<void>) {
  const client = dynamo(getConfig().homeRegion);
  const name = `race-${randomUUID()}`;
  const state = { fired: false };
  client.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as Record<string, unknown>;
      if (!state.fired && "TransactItems" in input && JSON.stringify(input).includes(marker)) {
        state.fired = true;
        await during();
      }
      return next(args);
    },
    { step: "initialize", name },
  );
  return { state, remove: () => client.middlewareStack.remove(name) };
}

describe("GET /api/clients/{clientId}/members", () => {
  it("lists the members with their user fields for any member, paginated", async () => {
    const owner = await stack.newUser({ firstName: "Olive", lastName: "Owner" });
    const org = { clientId: await createClientFor(owner, "Listed"), owner };
    const admin = await joined(org, "admin");
    const plain = await stack.newUser({ firstName: "Uma", lastName: "User" });
    await joinClient(owner, org.clientId, plain, "user");

    const response = await plain.api.get(membersPath(org.clientId));
    expect(response.status).toBe(200);
    expect(response.body.message).toEqual(expect.any(String));
    const byId = new Map((response.body.members as { userId: string }[]).map((m) => [m.userId, m] as const));
    expect(byId.size).toBe(3);
    expect(byId.get(owner.userId)).toEqual(
      memberShape(owner, ["owner", "admin"], { first: "Olive", last: "Owner" }),
    );
    expect(byId.get(admin.userId)).toEqual(memberShape(admin, ["admin"]));
    expect(byId.get(plain.userId)).toEqual(memberShape(plain, ["user"], { first: "Uma", last: "User" }));
    expect(response.body.pagination).toEqual({ page: 1, limit: 20, total: 3, pages: 1 });

    const page2 = await plain.api.get(`${membersPath(org.clientId)}?page=2&limit=2`);
    expect(page2.status).toBe(200);
    expect(page2.body.members).toHaveLength(1);
    expect(page2.body.pagination).toEqual({ page: 2, limit: 2, total: 3, pages: 2 });
    const page1 = await plain.api.get(`${membersPath(org.clientId)}?page=1&limit=2`);
    const seen = [...page1.body.members, ...page2.body.members].map((m: { userId: string }) => m.userId);
    expect(seen.sort()).toEqual([owner.userId, admin.userId, plain.userId].sort());
  });

  it.each([["limit=101"], ["limit=0"], ["page=0"], ["limit=abc"]])(
    "rejects the query %s with 400 naming the parameter",
    async (query) => {
      const org = await newOrg();
      const response = await org.owner.api.get(`${membersPath(org.clientId)}?${query}`);
      expect(response.status).toBe(400);
      expect(response.body.message).toBe(VALIDATION);
      expect(response.body.fields).toEqual([query.split("=")[0]]);
    },
  );

  it("answers a non-member with 404 Client not found, exactly as for an unknown client", async () => {
    const org = await newOrg();
    const stranger = await stack.newUser();
    const hidden = await stranger.api.get(membersPath(org.clientId));
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ message: "Client not found" });
    const unknown = await stranger.api.get(membersPath(UNKNOWN_ID));
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(hidden.body);
  });

  it("requires authentication", async () => {
    const org = await newOrg();
    expect((await stack.anonymous.get(membersPath(org.clientId))).status).toBe(401);
  });
});

describe("GET /api/clients/{clientId}/members/{userId}", () => {
  it("returns one member as a one-element `members` array", async () => {
    const org = await newOrg();
    const plain = await joined(org, "user");
    const response = await plain.api.get(membersPath(org.clientId, org.owner.userId));
    expect(response.status).toBe(200);
    expect(response.body.message).toEqual(expect.any(String));
    expect(response.body.members).toEqual([memberShape(org.owner, ["owner", "admin"])]);
  });

  it("answers 404 Member not found for an unknown user and for a user who is not a member", async () => {
    const org = await newOrg();
    const outsider = await stack.newUser();
    for (const userId of [UNKNOWN_ID, outsider.userId]) {
      const response = await org.owner.api.get(membersPath(org.clientId, userId));
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ message: "Member not found" });
    }
  });

  it("answers a non-member caller with 404 Client not found", async () => {
    const org = await newOrg();
    const stranger = await stack.newUser();
    const response = await stranger.api.get(membersPath(org.clientId, org.owner.userId));
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ message: "Client not found" });
  });
});

describe("POST /api/clients/{clientId}/members", () => {
  it("is not supported: 405 pointing to invites, and nothing is stored", async () => {
    const org = await newOrg();
    const other = await stack.newUser();
    const response = await org.owner.api.post(membersPath(org.clientId), {
      userId: other.userId,
      roles: ["user"],
    });
    expect(response.status).toBe(405);
    expect(response.body.message).toMatch(/invites/);
    expect(response.headers.get("allow")).toBe("GET");
    expect(await storedItem(keys.member(org.clientId, other.userId))).toBeUndefined();
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 1, adminCount: 1, ownerCount: 1 });
  });
});

describe("PUT /api/clients/{clientId}/members/{userId}", () => {
  it("lets an admin make a user admin and back, keeping the counts in step", async () => {
    const org = await newOrg();
    const plain = await joined(org, "user");
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 1, ownerCount: 1 });
    const before = await storedItem(keys.member(org.clientId, plain.userId));

    const promoted = await org.owner.api.put(membersPath(org.clientId, plain.userId), { roles: ["admin"] });
    expect(promoted.status).toBe(200);
    expect(promoted.body.message).toEqual(expect.any(String));
    expect(promoted.body.message).not.toMatch(/retains|keeps/);
    expect(promoted.body.members).toEqual([memberShape(plain, ["admin"])]);
    const stored = await storedItem(keys.member(org.clientId, plain.userId));
    expect(stored?.roles).toEqual(["admin"]);
    expect(stored?.memberUpdated).not.toBe(before?.memberUpdated);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 2, ownerCount: 1 });

    // The new admin can now manage members.
    const asAdmin = await plain.api.put(membersPath(org.clientId, plain.userId), {
      roles: ["admin", "user"],
    });
    expect(asAdmin.status).toBe(200);
    expect(asAdmin.body.members[0].roles).toEqual(["admin", "user"]);

    const demoted = await org.owner.api.put(membersPath(org.clientId, plain.userId), { roles: ["user"] });
    expect(demoted.status).toBe(200);
    expect(demoted.body.members).toEqual([memberShape(plain, ["user"])]);
    expect(await storedRoles(org.clientId, plain)).toEqual(["user"]);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 1, ownerCount: 1 });
    await expectConsistentState(org.clientId);
  });

  it("with two admins, lets one lose the admin role", async () => {
    const org = await newOrg();
    const admin = await joined(org, "admin");
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 2, ownerCount: 1 });
    const response = await org.owner.api.put(membersPath(org.clientId, admin.userId), { roles: ["user"] });
    expect(response.status).toBe(200);
    expect(response.body.message).not.toMatch(/retains/);
    expect(response.body.members[0].roles).toEqual(["user"]);
    expect(await storedRoles(org.clientId, admin)).toEqual(["user"]);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 1, ownerCount: 1 });
  });

  it("keeps the admin role of the last remaining admin: 200, and the message says so", async () => {
    const { org, a, b } = await orgWithTwoPlainAdmins();
    const first = await a.api.put(membersPath(org.clientId, b.userId), { roles: ["user"] });
    expect(first.status).toBe(200);
    expect(await storedCounts(org.clientId)).toMatchObject({ adminCount: 1 });

    // a is now the last admin: the owner tries to take it away, then a tries on themselves.
    for (const caller of [org.owner, a]) {
      const response = await caller.api.put(membersPath(org.clientId, a.userId), { roles: ["user"] });
      expect(response.status).toBe(200);
      expect(response.body.message).toMatch(/retains the admin role/);
      expect(response.body.members[0].roles).toContain("admin");
      expect(await storedRoles(org.clientId, a)).toContain("admin");
      expect(await storedCounts(org.clientId)).toEqual({ memberCount: 3, adminCount: 1, ownerCount: 1 });
    }
    await expectConsistentState(org.clientId);
  });

  it("keeps the creator's admin role when they are the last admin", async () => {
    const org = await newOrg();
    const response = await org.owner.api.put(membersPath(org.clientId, org.owner.userId), {
      roles: ["user"],
    });
    expect(response.status).toBe(200);
    expect(response.body.message).toMatch(/retains the admin role/);
    expect(response.body.message).toMatch(/owner role/);
    expect(await storedRoles(org.clientId, org.owner)).toEqual(expect.arrayContaining(["owner", "admin"]));
    expect(await storedCounts(org.clientId)).toMatchObject({ adminCount: 1, ownerCount: 1 });
  });

  it("never removes the owner role through the API; the message says the user keeps it", async () => {
    const org = await newOrg();
    const admin = await joined(org, "admin");
    for (const caller of [admin, org.owner]) {
      const response = await caller.api.put(membersPath(org.clientId, org.owner.userId), {
        roles: ["admin"],
      });
      expect(response.status).toBe(200);
      expect(response.body.message).toMatch(/owner role/);
      expect(response.body.members[0].roles).toEqual(["owner", "admin"]);
      expect(await storedRoles(org.clientId, org.owner)).toEqual(["owner", "admin"]);
      expect(await storedCounts(org.clientId)).toMatchObject({ ownerCount: 1 });
    }
    // Losing admin (another admin exists) still works; the owner role stays.
    const response = await admin.api.put(membersPath(org.clientId, org.owner.userId), { roles: ["user"] });
    expect(response.status).toBe(200);
    expect(response.body.message).toMatch(/owner role/);
    expect(response.body.message).not.toMatch(/retains the admin role/);
    expect(await storedRoles(org.clientId, org.owner)).toEqual(["owner", "user"]);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 1, ownerCount: 1 });
  });

  it("lets only an owner grant the owner role", async () => {
    const org = await newOrg();
    const admin = await joined(org, "admin");
    const plain = await joined(org, "user");
    for (const roles of [["owner"], ["owner", "admin"]]) {
      const refused = await admin.api.put(membersPath(org.clientId, plain.userId), { roles });
      expect(refused.status).toBe(403);
      expect(refused.body.message).toBe("Only an owner can grant the owner role");
      expect(await storedRoles(org.clientId, plain)).toEqual(["user"]);
    }
    // An admin cannot make themselves owner either.
    const self = await admin.api.put(membersPath(org.clientId, admin.userId), { roles: ["owner", "admin"] });
    expect(self.status).toBe(403);
    expect(await storedRoles(org.clientId, admin)).toEqual(["admin"]);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 3, adminCount: 2, ownerCount: 1 });

    const granted = await org.owner.api.put(membersPath(org.clientId, plain.userId), { roles: ["owner"] });
    expect(granted.status).toBe(200);
    expect(granted.body.members[0].roles).toEqual(["owner"]);
    expect(await storedRoles(org.clientId, plain)).toEqual(["owner"]);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 3, adminCount: 2, ownerCount: 2 });
  });

  it("is refused to a plain user (403) and to a non-member (404), changing nothing", async () => {
    const org = await newOrg();
    const plain = await joined(org, "user");
    const other = await joined(org, "user");
    for (const target of [plain, other, org.owner]) {
      const response = await plain.api.put(membersPath(org.clientId, target.userId), { roles: ["admin"] });
      expect(response.status).toBe(403);
      expect(response.body.message).toBe("Forbidden: requires the admin role");
    }
    const stranger = await stack.newUser();
    const hidden = await stranger.api.put(membersPath(org.clientId, plain.userId), { roles: ["admin"] });
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ message: "Client not found" });
    expect(await storedRoles(org.clientId, plain)).toEqual(["user"]);
    expect(await storedRoles(org.clientId, other)).toEqual(["user"]);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 3, adminCount: 1, ownerCount: 1 });
  });

  it("answers 404 Member not found for a user who is not a member", async () => {
    const org = await newOrg();
    const outsider = await stack.newUser();
    for (const userId of [UNKNOWN_ID, outsider.userId]) {
      const response = await org.owner.api.put(membersPath(org.clientId, userId), { roles: ["user"] });
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ message: "Member not found" });
    }
    expect(await storedItem(keys.member(org.clientId, outsider.userId))).toBeUndefined();
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 1, adminCount: 1, ownerCount: 1 });
  });

  describe("body validation", () => {
    let org: Org;
    let plain: TestUser;
    beforeAll(async () => {
      org = await newOrg("Validated");
      plain = await joined(org, "user");
    });

    it.each([
      [undefined, ["roles"]],
      [{}, ["roles"]],
      [{ roles: [] }, ["roles"]],
      [{ roles: "admin" }, ["roles"]],
      [{ roles: ["superuser"] }, ["roles.0"]],
      [{ roles: ["user", "root"] }, ["roles.1"]],
      [{ roles: ["user"], userId: "someone-else" }, ["userId"]],
    ])("rejects %j with 400 naming %j", async (body, fields) => {
      const response = await org.owner.api.put(membersPath(org.clientId, plain.userId), body);
      expect(response.status).toBe(400);
      expect(response.body.message).toBe(VALIDATION);
      expect(response.body.fields).toEqual(fields);
      expect(await storedRoles(org.clientId, plain)).toEqual(["user"]);
    });

    it("rejects a body that is not JSON", async () => {
      const response = await org.owner.api.put(membersPath(org.clientId, plain.userId), "{roles:");
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ message: VALIDATION, fields: ["body"] });
    });
  });
});

describe("DELETE /api/clients/{clientId}/members/{userId}", () => {
  it("lets an admin remove a user: member gone, counts down, client off the user's list", async () => {
    const org = await newOrg();
    const admin = await joined(org, "admin");
    const plain = await joined(org, "user");
    expect(await storedUserClients(plain)).toContain(org.clientId);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 3, adminCount: 2, ownerCount: 1 });

    const response = await admin.api.delete(membersPath(org.clientId, plain.userId));
    expect(response.status).toBe(200);
    expect(response.body.message).toEqual(expect.any(String));
    expect(await storedItem(keys.member(org.clientId, plain.userId))).toBeUndefined();
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 2, ownerCount: 1 });
    expect(await storedUserClients(plain)).not.toContain(org.clientId);
    await expectConsistentState(org.clientId);

    // The removed user no longer sees the client.
    expect((await plain.api.get(membersPath(org.clientId))).status).toBe(404);
    expect((await plain.api.get(`/api/clients/${org.clientId}`)).status).toBe(404);
    const again = await admin.api.delete(membersPath(org.clientId, plain.userId));
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ message: "Member not found" });
  });

  it("lets an admin remove another admin while one remains", async () => {
    const org = await newOrg();
    const admin = await joined(org, "admin");
    const response = await org.owner.api.delete(membersPath(org.clientId, admin.userId));
    expect(response.status).toBe(200);
    expect(await storedItem(keys.member(org.clientId, admin.userId))).toBeUndefined();
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 1, adminCount: 1, ownerCount: 1 });
    expect(await storedUserClients(admin)).not.toContain(org.clientId);
  });

  it("refuses to remove the last remaining admin, also when they remove themselves", async () => {
    const { org, a, b } = await orgWithTwoPlainAdmins();
    expect((await a.api.delete(membersPath(org.clientId, b.userId))).status).toBe(200);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 1, ownerCount: 1 });

    for (const caller of [org.owner, a]) {
      const response = await caller.api.delete(membersPath(org.clientId, a.userId));
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ message: LAST_ADMIN_DELETE });
      expect(await storedRoles(org.clientId, a)).toEqual(["admin"]);
      expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 1, ownerCount: 1 });
      expect(await storedUserClients(a)).toContain(org.clientId);
    }
  });

  it("refuses to let the creator, the sole admin, leave", async () => {
    const org = await newOrg();
    await joined(org, "user");
    const response = await org.owner.api.delete(membersPath(org.clientId, org.owner.userId));
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ message: LAST_ADMIN_DELETE });
    expect(await storedRoles(org.clientId, org.owner)).toEqual(["owner", "admin"]);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 1, ownerCount: 1 });
  });

  it("refuses a plain user removing someone else (403) but lets them leave", async () => {
    const org = await newOrg();
    const plain = await joined(org, "user");
    const other = await joined(org, "user");
    for (const target of [other, org.owner]) {
      const response = await plain.api.delete(membersPath(org.clientId, target.userId));
      expect(response.status).toBe(403);
      expect(response.body.message).toBe("Forbidden: requires the admin role");
      expect(await storedItem(keys.member(org.clientId, target.userId))).toBeDefined();
    }
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 3, adminCount: 1, ownerCount: 1 });

    const leave = await plain.api.delete(membersPath(org.clientId, plain.userId));
    expect(leave.status).toBe(200);
    expect(await storedItem(keys.member(org.clientId, plain.userId))).toBeUndefined();
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 1, ownerCount: 1 });
    expect(await storedUserClients(plain)).not.toContain(org.clientId);
    await expectConsistentState(org.clientId);
  });

  it("refuses to let anyone else remove an owner (403)", async () => {
    const org = await newOrg();
    const admin = await joined(org, "admin");
    const response = await admin.api.delete(membersPath(org.clientId, org.owner.userId));
    expect(response.status).toBe(403);
    expect(await storedRoles(org.clientId, org.owner)).toEqual(["owner", "admin"]);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 2, ownerCount: 1 });
    expect(await storedUserClients(org.owner)).toContain(org.clientId);

    // A second owner is protected from the first one as well.
    const coOwner = await joined(org, "owner");
    const byOwner = await org.owner.api.delete(membersPath(org.clientId, coOwner.userId));
    expect(byOwner.status).toBe(403);
    expect(await storedRoles(org.clientId, coOwner)).toEqual(["owner"]);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 3, adminCount: 2, ownerCount: 2 });
  });

  it("lets an owner leave while another owner remains, but not the last owner", async () => {
    const org = await newOrg();
    const admin = await joined(org, "admin");
    const coOwner = await joined(org, "owner");
    const leave = await coOwner.api.delete(membersPath(org.clientId, coOwner.userId));
    expect(leave.status).toBe(200);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 2, ownerCount: 1 });
    expect(await storedUserClients(coOwner)).not.toContain(org.clientId);

    // The creator drops admin (another admin exists) and is then the last owner, though not an admin.
    expect(
      (await org.owner.api.put(membersPath(org.clientId, org.owner.userId), { roles: ["owner"] })).status,
    ).toBe(200);
    const last = await org.owner.api.delete(membersPath(org.clientId, org.owner.userId));
    expect(last.status).toBe(400);
    expect(last.body).toEqual({ message: "Cannot delete member, last remaining owner" });
    expect(await storedRoles(org.clientId, org.owner)).toEqual(["owner"]);
    expect(await storedRoles(org.clientId, admin)).toEqual(["admin"]);
    await expectConsistentState(org.clientId);
  });

  it("answers 404 Member not found for a non-member and Client not found for a non-member caller", async () => {
    const org = await newOrg();
    const outsider = await stack.newUser();
    for (const userId of [UNKNOWN_ID, outsider.userId]) {
      const response = await org.owner.api.delete(membersPath(org.clientId, userId));
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ message: "Member not found" });
    }
    const hidden = await outsider.api.delete(membersPath(org.clientId, org.owner.userId));
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ message: "Client not found" });
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 1, adminCount: 1, ownerCount: 1 });
  });
});

describe("the devops and reader roles", () => {
  /** A member of `org` holding exactly `roles`, assigned by the owner with PUT (as the API allows). */
  async function withRoles(org: Org, roles: string[]) {
    const user = await joined(org, "user");
    const assigned = await org.owner.api.put(membersPath(org.clientId, user.userId), { roles });
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(200);
    expect(assigned.body.members).toEqual([memberShape(user, roles)]);
    expect(await storedRoles(org.clientId, user)).toEqual(roles);
    return user;
  }

  const newTarget = () => ({
    targetName: "Echo",
    targetRegion: getConfig().regions[0],
    targetBaseURL: "https://api.example.com/base",
    targetTestPath: "/health",
  });

  it("assigns devops and reader in canonical order, keeping the admin and owner counts", async () => {
    const org = await newOrg();
    const user = await joined(org, "user");
    const response = await org.owner.api.put(membersPath(org.clientId, user.userId), {
      roles: ["reader", "devops", "reader"],
    });
    expect(response.status).toBe(200);
    expect(response.body.members[0].roles).toEqual(["devops", "reader"]);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 1, ownerCount: 1 });
    await expectConsistentState(org.clientId);
  });

  it("a reader reads the client and its members but changes nothing", async () => {
    const org = await newOrg();
    const other = await joined(org, "user");
    const reader = await withRoles(org, ["reader"]);

    const client = await reader.api.get(`/api/clients/${org.clientId}`);
    expect(client.status).toBe(200);
    expect(client.body.clients[0].clientMembers).toContainEqual({ userId: reader.userId, roles: ["reader"] });
    const listed = await reader.api.get(membersPath(org.clientId));
    expect(listed.status).toBe(200);
    expect(listed.body.members).toHaveLength(3);
    expect((await reader.api.get(membersPath(org.clientId, other.userId))).status).toBe(200);
    expect((await reader.api.get(`/api/clients/${org.clientId}/targets`)).status).toBe(200);

    const removal = await reader.api.delete(membersPath(org.clientId, other.userId));
    expect(removal.status).toBe(403);
    expect(removal.body.message).toBe("Forbidden: requires the admin role");
    const promotion = await reader.api.put(membersPath(org.clientId, reader.userId), { roles: ["user"] });
    expect(promotion.status).toBe(403);
    expect(promotion.body.message).toBe("Forbidden: requires the admin role");
    const rename = await reader.api.put(`/api/clients/${org.clientId}`, { clientName: "Renamed" });
    expect(rename.status).toBe(403);
    const target = await reader.api.post(`/api/clients/${org.clientId}/targets`, newTarget());
    expect(target.status).toBe(403);
    expect(target.body.message).toBe("Forbidden: requires the devops role");

    expect(await storedRoles(org.clientId, other)).toEqual(["user"]);
    expect(await storedRoles(org.clientId, reader)).toEqual(["reader"]);
    expect((await storedItem(keys.client(org.clientId)))?.clientName).toBe("Acme");
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 3, adminCount: 1, ownerCount: 1 });
  });

  it("a devops member manages resources but not the organisation's people", async () => {
    const org = await newOrg();
    const other = await joined(org, "user");
    const devops = await withRoles(org, ["devops"]);

    const target = await devops.api.post(`/api/clients/${org.clientId}/targets`, newTarget());
    expect(target.status, JSON.stringify(target.body)).toBe(201);
    expect(target.body.targets[0].targetName).toBe("Echo");

    for (const [userId, roles] of [
      [other.userId, ["devops"]],
      [devops.userId, ["admin"]],
    ] as const) {
      const response = await devops.api.put(membersPath(org.clientId, userId), { roles });
      expect(response.status).toBe(403);
      expect(response.body.message).toBe("Forbidden: requires the admin role");
    }
    const removal = await devops.api.delete(membersPath(org.clientId, other.userId));
    expect(removal.status).toBe(403);
    expect(removal.body.message).toBe("Forbidden: requires the admin role");
    const deletion = await devops.api.delete(`/api/clients/${org.clientId}`, { immediatelyDelete: true });
    expect(deletion.status).toBe(403);

    expect(await storedRoles(org.clientId, other)).toEqual(["user"]);
    expect(await storedRoles(org.clientId, devops)).toEqual(["devops"]);
    expect(await storedItem(keys.client(org.clientId))).toBeDefined();

    // Any member may still leave.
    expect((await devops.api.delete(membersPath(org.clientId, devops.userId))).status).toBe(200);
    await expectConsistentState(org.clientId);
  });
});

describe("concurrent membership changes", () => {
  it("two admins demoting each other at the same moment leave at least one admin", async () => {
    for (let round = 0; round < 3; round++) {
      const { org, a, b } = await orgWithTwoPlainAdmins();
      const responses = await Promise.all([
        a.api.put(membersPath(org.clientId, b.userId), { roles: ["user"] }),
        b.api.put(membersPath(org.clientId, a.userId), { roles: ["user"] }),
      ]);
      for (const response of responses) expect([200, 403]).toContain(response.status);
      const roles = await expectConsistentState(org.clientId);
      const admins = [a, b].filter((u) => roles.get(u.userId)?.includes("admin"));
      expect(admins).toHaveLength(1);
      expect((await storedCounts(org.clientId)).adminCount).toBe(1);
      expect(roles.size).toBe(3);
    }
  });

  it("two admins removing each other at the same moment leave one of them", async () => {
    for (let round = 0; round < 3; round++) {
      const { org, a, b } = await orgWithTwoPlainAdmins();
      const responses = await Promise.all([
        a.api.delete(membersPath(org.clientId, b.userId)),
        b.api.delete(membersPath(org.clientId, a.userId)),
      ]);
      expect(responses.filter((r) => r.status === 200)).toHaveLength(1);
      const roles = await expectConsistentState(org.clientId);
      const survivors = [a, b].filter((u) => roles.has(u.userId));
      expect(survivors).toHaveLength(1);
      expect(roles.get(survivors[0]!.userId)).toEqual(["admin"]);
      expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 1, ownerCount: 1 });
      const removed = [a, b].find((u) => !roles.has(u.userId))!;
      expect(await storedUserClients(removed)).not.toContain(org.clientId);
    }
  });

  it("two admins leaving at the same moment leave one of them", async () => {
    const { org, a, b } = await orgWithTwoPlainAdmins();
    const responses = await Promise.all([
      a.api.delete(membershipsPath(a, org.clientId)),
      b.api.delete(membershipsPath(b, org.clientId)),
    ]);
    expect(responses.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(responses.find((r) => r.status === 400)?.body).toEqual({ message: LAST_ADMIN_DELETE });
    const roles = await expectConsistentState(org.clientId);
    expect([a, b].filter((u) => roles.has(u.userId))).toHaveLength(1);
    expect(await storedCounts(org.clientId)).toMatchObject({ adminCount: 1 });
  });

  it("an admin demoted while their removal of a member is in flight is refused when it is decided again", async () => {
    const org = await newOrg();
    const admin = await joined(org, "admin");
    const plain = await joined(org, "user");
    const race = beforeTransactionMentioning(`MEMBER#${plain.userId}`, async () => {
      const demoted = await org.owner.api.put(membersPath(org.clientId, admin.userId), { roles: ["user"] });
      expect(demoted.status).toBe(200);
    });
    try {
      const response = await admin.api.delete(membersPath(org.clientId, plain.userId));
      expect(race.state.fired).toBe(true);
      expect(response.status).toBe(403);
    } finally {
      race.remove();
    }
    expect(await storedRoles(org.clientId, admin)).toEqual(["user"]);
    expect(await storedRoles(org.clientId, plain)).toEqual(["user"]);
    await expectConsistentState(org.clientId);
  });

  it("an admin demoted while their role change is in flight is refused when it is decided again", async () => {
    const org = await newOrg();
    const admin = await joined(org, "admin");
    const plain = await joined(org, "user");
    const race = beforeTransactionMentioning(`MEMBER#${plain.userId}`, async () => {
      const demoted = await org.owner.api.put(membersPath(org.clientId, admin.userId), { roles: ["user"] });
      expect(demoted.status).toBe(200);
    });
    try {
      const response = await admin.api.put(membersPath(org.clientId, plain.userId), { roles: ["admin"] });
      expect(race.state.fired).toBe(true);
      expect(response.status).toBe(403);
    } finally {
      race.remove();
    }
    expect(await storedRoles(org.clientId, admin)).toEqual(["user"]);
    expect(await storedRoles(org.clientId, plain)).toEqual(["user"]);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 3, adminCount: 1, ownerCount: 1 });
  });
});

describe("GET /api/users/{userId}/memberships", () => {
  it("lists the caller's clients with their members, paginated", async () => {
    const user = await stack.newUser();
    const own = await createClientFor(user, "Own");
    const other = await newOrg("Joined");
    await joinClient(other.owner, other.clientId, user, "user");
    await newOrg("Not theirs");

    const response = await user.api.get(membershipsPath(user));
    expect(response.status).toBe(200);
    expect(response.body.message).toEqual(expect.any(String));
    const clients = response.body.clients as { clientId: string }[];
    expect(clients.map((c) => c.clientId).sort()).toEqual([own, other.clientId].sort());
    expect(clients.find((c) => c.clientId === own)).toMatchObject({
      clientName: "Own",
      clientMembers: [{ userId: user.userId, roles: ["owner", "admin"] }],
    });
    const joinedClient = clients.find((c) => c.clientId === other.clientId) as any;
    expect(joinedClient.clientName).toBe("Joined");
    expect(
      [...joinedClient.clientMembers].sort((x: any, y: any) => x.userId.localeCompare(y.userId)),
    ).toEqual(
      [
        { userId: other.owner.userId, roles: ["owner", "admin"] },
        { userId: user.userId, roles: ["user"] },
      ].sort((x, y) => x.userId.localeCompare(y.userId)),
    );
    expect(response.body.pagination).toEqual({ page: 1, limit: 20, total: 2, pages: 1 });

    const page2 = await user.api.get(`${membershipsPath(user)}?page=2&limit=1`);
    expect(page2.status).toBe(200);
    expect(page2.body.clients).toHaveLength(1);
    expect(page2.body.pagination).toEqual({ page: 2, limit: 1, total: 2, pages: 2 });
    const bad = await user.api.get(`${membershipsPath(user)}?limit=101`);
    expect(bad.status).toBe(400);
    expect(bad.body.fields).toEqual(["limit"]);
  });

  it("gets one membership by client id as `clients: [client]`", async () => {
    const org = await newOrg("Single");
    const plain = await joined(org, "user");
    const response = await plain.api.get(membershipsPath(plain, org.clientId));
    expect(response.status).toBe(200);
    expect(response.body.clients).toHaveLength(1);
    expect(response.body.clients[0]).toMatchObject({ clientId: org.clientId, clientName: "Single" });
    expect(response.body.clients[0].clientMembers).toHaveLength(2);
    expect(response.body.clients[0].clientMembers).toContainEqual({ userId: plain.userId, roles: ["user"] });

    const notMine = await newOrg();
    const hidden = await plain.api.get(membershipsPath(plain, notMine.clientId));
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ message: "Client not found" });
  });

  it("refuses another user's memberships (403)", async () => {
    const org = await newOrg();
    const other = await stack.newUser();
    for (const path of [membershipsPath(org.owner), membershipsPath(org.owner, org.clientId)]) {
      const response = await other.api.get(path);
      expect(response.status).toBe(403);
      expect(response.body.message).toMatch(/^Forbidden/);
    }
    const deletion = await other.api.delete(membershipsPath(org.owner, org.clientId));
    expect(deletion.status).toBe(403);
    expect(await storedRoles(org.clientId, org.owner)).toEqual(["owner", "admin"]);
  });
});

describe("POST and PUT /api/users/{userId}/memberships", () => {
  it.each([
    ["POST", false, /invite/],
    ["PUT", true, /PUT \/api\/clients\/\{clientId\}\/members/],
    ["POST", true, /invite/],
    ["PUT", false, /invite|members/],
  ])("%s (item path: %s) is not supported: 405 with a helpful message", async (method, item, hint) => {
    const org = await newOrg();
    const user = await stack.newUser();
    const path = item ? membershipsPath(user, org.clientId) : membershipsPath(user);
    const response = await user.api.request(method, path, { clientId: org.clientId, roles: ["admin"] });
    expect(response.status).toBe(405);
    expect(response.body.message).toMatch(hint);
    expect(response.headers.get("allow")).toEqual(expect.any(String));
    expect(await storedItem(keys.member(org.clientId, user.userId))).toBeUndefined();
    expect(await storedUserClients(user)).toEqual([]);
  });
});

describe("DELETE /api/users/{userId}/memberships/{membershipId}", () => {
  it("removes the caller's own membership", async () => {
    const org = await newOrg();
    const plain = await joined(org, "user");
    const response = await plain.api.delete(membershipsPath(plain, org.clientId));
    expect(response.status).toBe(200);
    expect(response.body.message).toEqual(expect.any(String));
    expect(await storedItem(keys.member(org.clientId, plain.userId))).toBeUndefined();
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 1, adminCount: 1, ownerCount: 1 });
    expect(await storedUserClients(plain)).not.toContain(org.clientId);
    const listed = await plain.api.get(membershipsPath(plain));
    expect(listed.body.clients).toEqual([]);
    const again = await plain.api.delete(membershipsPath(plain, org.clientId));
    expect(again.status).toBe(404);
  });

  it("lets an admin leave while another admin remains", async () => {
    const { org, a, b } = await orgWithTwoPlainAdmins();
    const response = await a.api.delete(membershipsPath(a, org.clientId));
    expect(response.status).toBe(200);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 2, adminCount: 1, ownerCount: 1 });
    expect(await storedUserClients(a)).not.toContain(org.clientId);

    const last = await b.api.delete(membershipsPath(b, org.clientId));
    expect(last.status).toBe(400);
    expect(last.body).toEqual({ message: LAST_ADMIN_DELETE });
    expect(await storedRoles(org.clientId, b)).toEqual(["admin"]);
    expect(await storedUserClients(b)).toContain(org.clientId);
  });

  it("refuses the last remaining admin with the spec's 400", async () => {
    const org = await newOrg();
    const response = await org.owner.api.delete(membershipsPath(org.owner, org.clientId));
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ message: LAST_ADMIN_DELETE });
    expect(await storedRoles(org.clientId, org.owner)).toEqual(["owner", "admin"]);
    expect(await storedCounts(org.clientId)).toEqual({ memberCount: 1, adminCount: 1, ownerCount: 1 });
    expect(await storedUserClients(org.owner)).toContain(org.clientId);
  });

  it("answers 404 for a client the caller is not a member of", async () => {
    const org = await newOrg();
    const stranger = await stack.newUser();
    const response = await stranger.api.delete(membershipsPath(stranger, org.clientId));
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ message: "Client not found" });
  });
});
