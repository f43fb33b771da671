/** Membership rules (spec 4.1, 4.2) as pure decisions. */
import { describe, expect, it } from "vitest";
import {
  checkClientDeletion,
  LAST_ADMIN_DELETE,
  LAST_ADMIN_RETAINED,
  LAST_OWNER_DELETE,
  NOT_SOLE_ADMIN,
  OWNER_RETAINED,
  planMemberRemoval,
  planRoleChange,
  type RemovalPlan,
} from "#lib/domain/member-rules.ts";
import { errorOf } from "../support/errors.ts";

describe("planRoleChange", () => {
  const owner = ["owner", "admin"];

  it("applies a plain change with its deltas", () => {
    expect(
      planRoleChange({
        currentRoles: ["user"],
        requestedRoles: ["user", "admin"],
        actorRoles: ["admin"],
        counts: { adminCount: 1, ownerCount: 1 },
      }),
    ).toEqual({ roles: ["admin", "user"], notices: [], adminDelta: 1, ownerDelta: 0, changed: true });

    expect(
      planRoleChange({
        currentRoles: ["admin"],
        requestedRoles: ["user"],
        actorRoles: ["admin"],
        counts: { adminCount: 2, ownerCount: 1 },
      }),
    ).toEqual({ roles: ["user"], notices: [], adminDelta: -1, ownerDelta: 0, changed: true });
  });

  it("keeps the admin role of the last remaining admin, with a notice", () => {
    const plan = planRoleChange({
      currentRoles: ["admin"],
      requestedRoles: ["user"],
      actorRoles: ["admin"],
      counts: { adminCount: 1, ownerCount: 1 },
    });
    expect(plan).toEqual({
      roles: ["admin", "user"],
      notices: [LAST_ADMIN_RETAINED],
      adminDelta: 0,
      ownerDelta: 0,
      changed: true,
    });
    expect(LAST_ADMIN_RETAINED).toMatch(/retains the admin role/);
  });

  it("reports no change when the last admin's requested demotion is all that was asked", () => {
    const plan = planRoleChange({
      currentRoles: ["admin", "user"],
      requestedRoles: ["user"],
      actorRoles: ["admin"],
      counts: { adminCount: 1, ownerCount: 0 },
    });
    expect(plan).toEqual({
      roles: ["admin", "user"],
      notices: [LAST_ADMIN_RETAINED],
      adminDelta: 0,
      ownerDelta: 0,
      changed: false,
    });
  });

  it("never removes the owner role, with a notice, even when other owners exist", () => {
    const plan = planRoleChange({
      currentRoles: owner,
      requestedRoles: ["admin"],
      actorRoles: owner,
      counts: { adminCount: 3, ownerCount: 2 },
    });
    expect(plan).toEqual({
      roles: ["owner", "admin"],
      notices: [OWNER_RETAINED],
      adminDelta: 0,
      ownerDelta: 0,
      changed: false,
    });

    const demoted = planRoleChange({
      currentRoles: owner,
      requestedRoles: ["user"],
      actorRoles: ["admin"],
      counts: { adminCount: 2, ownerCount: 2 },
    });
    expect(demoted).toEqual({
      roles: ["owner", "user"],
      notices: [OWNER_RETAINED],
      adminDelta: -1,
      ownerDelta: 0,
      changed: true,
    });
  });

  it("retains both owner and last-admin roles together", () => {
    const plan = planRoleChange({
      currentRoles: owner,
      requestedRoles: ["user"],
      actorRoles: owner,
      counts: { adminCount: 1, ownerCount: 1 },
    });
    expect(plan.roles).toEqual(["owner", "admin", "user"]);
    expect(plan.notices).toEqual([OWNER_RETAINED, LAST_ADMIN_RETAINED]);
    expect([plan.adminDelta, plan.ownerDelta, plan.changed]).toEqual([0, 0, true]);
  });

  it("lets only an owner grant the owner role (403 otherwise)", () => {
    const error = errorOf(() =>
      planRoleChange({
        currentRoles: ["user"],
        requestedRoles: ["owner"],
        actorRoles: ["admin", "user"],
        counts: { adminCount: 1, ownerCount: 1 },
      }),
    );
    expect(error.status).toBe(403);
    expect(error.expose).toBe(true);
    expect(error.message).toMatch(/owner/);

    expect(
      planRoleChange({
        currentRoles: ["user"],
        requestedRoles: ["owner", "user"],
        actorRoles: ["owner"],
        counts: { adminCount: 1, ownerCount: 1 },
      }),
    ).toEqual({ roles: ["owner", "user"], notices: [], adminDelta: 0, ownerDelta: 1, changed: true });
  });

  it("lets an admin keep an existing owner's owner role in the request (not a grant)", () => {
    const plan = planRoleChange({
      currentRoles: owner,
      requestedRoles: ["owner", "admin", "user"],
      actorRoles: ["admin"],
      counts: { adminCount: 2, ownerCount: 1 },
    });
    expect(plan).toEqual({
      roles: ["owner", "admin", "user"],
      notices: [],
      adminDelta: 0,
      ownerDelta: 0,
      changed: true,
    });
  });

  it("is unchanged when the request repeats the current roles in any order or with duplicates", () => {
    expect(
      planRoleChange({
        currentRoles: ["user", "admin"],
        requestedRoles: ["admin", "user", "admin"],
        actorRoles: ["admin"],
        counts: { adminCount: 1, ownerCount: 0 },
      }),
    ).toEqual({ roles: ["admin", "user"], notices: [], adminDelta: 0, ownerDelta: 0, changed: false });
  });
});

describe("planMemberRemoval", () => {
  it("refuses to remove the last remaining admin (400, exact message), also when they remove themselves", () => {
    const byOther = errorOf(() =>
      planMemberRemoval({
        actorUserId: "owner-1",
        actorRoles: ["owner"],
        targetUserId: "admin-1",
        targetRoles: ["admin"],
        counts: { adminCount: 1, ownerCount: 1 },
      }),
    );
    expect(byOther.status).toBe(400);
    expect(byOther.message).toBe("Cannot delete member, last remaining admin");
    expect(byOther.body).toEqual({ message: "Cannot delete member, last remaining admin" });
    expect(LAST_ADMIN_DELETE).toBe("Cannot delete member, last remaining admin");

    const self = errorOf(() =>
      planMemberRemoval({
        actorUserId: "admin-1",
        actorRoles: ["admin"],
        targetUserId: "admin-1",
        targetRoles: ["admin"],
        counts: { adminCount: 1, ownerCount: 0 },
      }),
    );
    expect(self.status).toBe(400);
    expect(self.message).toBe(LAST_ADMIN_DELETE);
  });

  it("refuses to let the last owner leave (400)", () => {
    const error = errorOf(() =>
      planMemberRemoval({
        actorUserId: "o1",
        actorRoles: ["owner", "admin"],
        targetUserId: "o1",
        targetRoles: ["owner", "admin"],
        counts: { adminCount: 2, ownerCount: 1 },
      }),
    );
    expect(error.status).toBe(400);
    expect(error.message).toBe(LAST_OWNER_DELETE);
  });

  it("forbids removing an owner other than oneself (403), even by another owner", () => {
    for (const actorRoles of [["admin"], ["owner", "admin"]]) {
      const error = errorOf(() =>
        planMemberRemoval({
          actorUserId: "a1",
          actorRoles,
          targetUserId: "o1",
          targetRoles: ["owner", "admin"],
          counts: { adminCount: 3, ownerCount: 2 },
        }),
      );
      expect(error.status).toBe(403);
    }
  });

  it.each([["user"], ["reader"], ["devops"]])("forbids a %s member removing someone else (403)", (role) => {
    const error = errorOf(() =>
      planMemberRemoval({
        actorUserId: "u1",
        actorRoles: [role],
        targetUserId: "u2",
        targetRoles: ["reader"],
        counts: { adminCount: 1, ownerCount: 1 },
      }),
    );
    expect(error.status).toBe(403);
    expect(error.message).toBe("Forbidden: requires the admin role");
  });

  it("allows self-removal and reports the deltas", () => {
    expect(
      planMemberRemoval({
        actorUserId: "u1",
        actorRoles: ["user"],
        targetUserId: "u1",
        targetRoles: ["user"],
        counts: { adminCount: 1, ownerCount: 1 },
      }),
    ).toSatisfy((plan: RemovalPlan) => plan.adminDelta === 0 && plan.ownerDelta === 0);

    expect(
      planMemberRemoval({
        actorUserId: "a1",
        actorRoles: ["admin", "user"],
        targetUserId: "a1",
        targetRoles: ["admin", "user"],
        counts: { adminCount: 2, ownerCount: 1 },
      }),
    ).toSatisfy((plan: RemovalPlan) => plan.adminDelta === -1 && plan.ownerDelta === 0);

    expect(
      planMemberRemoval({
        actorUserId: "o1",
        actorRoles: ["owner", "admin"],
        targetUserId: "o1",
        targetRoles: ["owner", "admin"],
        counts: { adminCount: 2, ownerCount: 2 },
      }),
    ).toEqual({ adminDelta: -1, ownerDelta: -1 });
  });

  it("lets an admin remove a plain user or another admin who is not the last", () => {
    const removeUser = planMemberRemoval({
      actorUserId: "a1",
      actorRoles: ["admin"],
      targetUserId: "u1",
      targetRoles: ["user"],
      counts: { adminCount: 1, ownerCount: 1 },
    });
    expect(removeUser.adminDelta + removeUser.ownerDelta).toBe(0);
    expect(
      planMemberRemoval({
        actorUserId: "a1",
        actorRoles: ["admin"],
        targetUserId: "a2",
        targetRoles: ["admin"],
        counts: { adminCount: 2, ownerCount: 1 },
      }).adminDelta,
    ).toBe(-1);
  });
});

describe("checkClientDeletion", () => {
  it("forbids deletion while another admin or owner exists (403, exact message)", () => {
    for (const otherRoles of [["admin"], ["owner"], ["owner", "admin"], ["user", "admin"]]) {
      const error = errorOf(() =>
        checkClientDeletion({
          callerUserId: "me",
          members: [
            { userId: "me", roles: ["owner", "admin"] },
            { userId: "other", roles: otherRoles },
          ],
        }),
      );
      expect(error.status).toBe(403);
      expect(error.message).toBe("Cannot delete client, not the sole admin");
      expect(error.body.message).toBe(NOT_SOLE_ADMIN);
      expect(error.body.hint).toContain("/members/me");
    }
  });

  it("forbids a plain user or a non-member (403)", () => {
    const members = [
      { userId: "admin", roles: ["owner", "admin"] },
      { userId: "plain", roles: ["user"] },
    ];
    expect(errorOf(() => checkClientDeletion({ callerUserId: "plain", members })).status).toBe(403);
    expect(errorOf(() => checkClientDeletion({ callerUserId: "stranger", members })).status).toBe(403);
  });

  it("allows the sole administrator, even with other plain users", () => {
    expect(() =>
      checkClientDeletion({
        callerUserId: "me",
        members: [
          { userId: "me", roles: ["owner", "admin"] },
          { userId: "u1", roles: ["user"] },
          { userId: "u2", roles: ["user"] },
        ],
      }),
    ).not.toThrow();
    expect(() =>
      checkClientDeletion({ callerUserId: "me", members: [{ userId: "me", roles: ["admin"] }] }),
    ).not.toThrow();
    expect(() =>
      checkClientDeletion({ callerUserId: "me", members: [{ userId: "me", roles: ["owner"] }] }),
    ).not.toThrow();
  });
});
