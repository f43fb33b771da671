/** Client roles (spec 2.2): what each role may do, for every role and action. */
import { describe, expect, it } from "vitest";
import {
  CLIENT_ROLES,
  type ClientAction,
  type ClientRole,
  can,
  isAdministrator,
  minimumRoleFor,
  normaliseRoles,
} from "#lib/shared/roles.ts";

const ACTIONS: readonly ClientAction[] = ["view", "use", "manage", "invite", "billing", "delete"];

/** The expected grant table, written out independently of the implementation. */
const EXPECTED: Record<ClientRole, Record<ClientAction, boolean>> = {
  reader: { view: true, use: false, manage: false, invite: false, billing: false, delete: false },
  user: { view: true, use: true, manage: false, invite: false, billing: false, delete: false },
  devops: { view: true, use: true, manage: true, invite: false, billing: false, delete: false },
  admin: { view: true, use: true, manage: true, invite: true, billing: false, delete: false },
  owner: { view: true, use: true, manage: true, invite: true, billing: true, delete: true },
};

describe("can", () => {
  for (const role of CLIENT_ROLES) {
    for (const action of ACTIONS) {
      const allowed = EXPECTED[role][action];
      it(`${role} ${allowed ? "may" : "may not"} ${action}`, () => {
        expect(can([role], action)).toBe(allowed);
      });
    }
  }

  it("grants what any one of several roles grants", () => {
    expect(can(["user", "admin"], "invite")).toBe(true);
    expect(can(["user", "owner"], "billing")).toBe(true);
    expect(can(["user", "admin"], "billing")).toBe(false);
  });

  it("grants nothing to no roles, unknown roles or MSP roles", () => {
    for (const action of ACTIONS) {
      expect(can([], action)).toBe(false);
      expect(can(["superuser"], action)).toBe(false);
      expect(can(["msp_owner", "msp_admin"], action)).toBe(false);
      // Not fooled by prototype keys of the grant table.
      expect(can(["constructor", "__proto__", "toString"], action)).toBe(false);
    }
  });
});

describe("minimumRoleFor", () => {
  it("names the least role that grants each action", () => {
    expect(Object.fromEntries(ACTIONS.map((action) => [action, minimumRoleFor(action)]))).toEqual({
      view: "reader",
      use: "user",
      manage: "devops",
      invite: "admin",
      billing: "owner",
      delete: "owner",
    });
  });

  it("is consistent with can: the minimum role grants the action and every lesser role does not", () => {
    const ladder: ClientRole[] = ["reader", "user", "devops", "admin", "owner"];
    for (const action of ACTIONS) {
      const minimum = minimumRoleFor(action);
      expect(can([minimum], action)).toBe(true);
      for (const lesser of ladder.slice(0, ladder.indexOf(minimum)))
        expect(can([lesser], action)).toBe(false);
    }
  });
});

describe("normaliseRoles", () => {
  it("orders canonically (owner, admin, devops, user, reader) and removes duplicates", () => {
    expect(normaliseRoles(["user", "owner", "admin", "user", "owner"])).toEqual(["owner", "admin", "user"]);
    expect(normaliseRoles(["reader", "devops", "owner"])).toEqual(["owner", "devops", "reader"]);
    expect(normaliseRoles(["admin", "owner"])).toEqual(["owner", "admin"]);
    expect(normaliseRoles(["user"])).toEqual(["user"]);
  });

  it("drops unknown roles", () => {
    expect(normaliseRoles(["msp_admin", "superuser", "admin", ""])).toEqual(["admin"]);
    expect(normaliseRoles([])).toEqual([]);
  });
});

describe("isAdministrator", () => {
  it.each([
    [["owner"], true],
    [["admin"], true],
    [["owner", "admin"], true],
    [["user", "admin"], true],
    [["user"], false],
    [[], false],
    [["msp_admin"], false],
  ])("%j -> %s", (roles, expected) => {
    expect(isAdministrator(roles)).toBe(expected);
  });

  it("agrees with the invite grant (people management) for every single role", () => {
    for (const role of CLIENT_ROLES) expect(isAdministrator([role])).toBe(can([role], "invite"));
  });
});
