/** The MSP API's decisions as pure functions: team rules, detach, MSP-path roles, configuration, reach. */
import { describe, expect, it } from "vitest";
import { clientConfigItemOf } from "#lib/db/entities/client-config.ts";
import { isShared, sharedKindOf } from "#lib/domain/access.ts";
import { detachRefusal, planMspPathRoles, plannedConfiguration } from "#lib/domain/msp-clients.ts";
import {
  planMspMemberRemoval,
  planMspRoleChange,
  requireGrantableRoles,
} from "#lib/domain/msp-member-rules.ts";
import { extendedExpiry } from "#lib/domain/msp-team.ts";
import { hasMspRole, highestMspRole, normaliseMspRoles } from "#lib/shared/roles.ts";
import { errorOf } from "../support/errors.ts";

const owner = { roles: ["msp_owner"], systemAdmin: false };
const admin = { roles: ["msp_admin"], systemAdmin: false };
const sysadmin = { roles: ["msp_owner"], systemAdmin: true };
const team = (...roles: string[][]) => roles.map((r) => ({ roles: r }));

describe("MSP roles", () => {
  it.each([
    [["msp_reader"], "msp_reader", true],
    [["msp_reader"], "msp_user", false],
    [["msp_user", "msp_reader"], "msp_user", true],
    [["msp_admin"], "msp_owner", false],
    [["msp_owner"], "msp_admin", true],
    [["admin", "owner"], "msp_reader", false],
    [["__proto__"], "msp_reader", false],
  ] as const)("%j holds %s: %s", (roles, minimum, holds) => {
    expect(hasMspRole(roles, minimum)).toBe(holds);
  });

  it("normalises highest first and finds the highest", () => {
    expect(normaliseMspRoles(["msp_reader", "msp_owner", "admin", "msp_reader"])).toEqual([
      "msp_owner",
      "msp_reader",
    ]);
    expect(highestMspRole(["msp_user", "msp_admin"])).toBe("msp_admin");
    expect(highestMspRole(["owner"])).toBeUndefined();
  });
});

describe("the MSP team rules", () => {
  it.each([
    ["no roles", undefined, owner, "Roles required"],
    ["an empty list", [], owner, "Roles required"],
    ["msp_owner by an msp_admin", ["msp_owner"], admin, "Forbidden"],
  ] as const)("refuses %s", (_label, roles, actor, message) => {
    expect(errorOf(() => requireGrantableRoles(roles, actor))?.message).toBe(message);
  });

  it("grants msp_owner from an owner or a system administrator", () => {
    expect(requireGrantableRoles(["msp_reader", "msp_owner"], owner)).toEqual(["msp_owner", "msp_reader"]);
    expect(requireGrantableRoles(["msp_owner"], { roles: [], systemAdmin: true })).toEqual(["msp_owner"]);
  });

  it.each([
    [
      "the last msp_owner",
      ["msp_owner"],
      ["msp_admin"],
      team(["msp_owner"], ["msp_admin"]),
      owner,
      "Cannot remove last msp_owner",
    ],
    [
      "the last msp_admin",
      ["msp_admin"],
      ["msp_user"],
      team(["msp_owner"], ["msp_admin"]),
      owner,
      "Cannot remove last msp_admin",
    ],
    [
      "an owner by an admin",
      ["msp_owner"],
      ["msp_user"],
      team(["msp_owner"], ["msp_owner"]),
      admin,
      "Forbidden",
    ],
  ])("a role change refuses to take from %s", (_label, current, requested, members, actor, message) => {
    expect(
      errorOf(() => planMspRoleChange({ actor, currentRoles: current, requestedRoles: requested, members }))
        ?.message,
    ).toBe(message);
  });

  it("allows a change that leaves an msp_owner and an msp_admin", () => {
    const members = team(["msp_owner"], ["msp_owner", "msp_admin"], ["msp_admin"]);
    expect(
      planMspRoleChange({
        actor: owner,
        currentRoles: ["msp_owner", "msp_admin"],
        requestedRoles: ["msp_user"],
        members,
      }),
    ).toEqual(["msp_user"]);
    expect(
      planMspRoleChange({
        actor: sysadmin,
        currentRoles: ["msp_user"],
        requestedRoles: ["msp_owner"],
        members,
      }),
    ).toEqual(["msp_owner"]);
  });

  it.each([
    [["msp_owner"], team(["msp_owner"]), owner, "Cannot remove last msp_owner"],
    [["msp_admin"], team(["msp_owner"], ["msp_admin"]), admin, "Cannot remove last msp_admin"],
    [["msp_owner"], team(["msp_owner"], ["msp_owner"]), admin, "Forbidden"],
  ])("removing %j from %j by %j: %s", (targetRoles, members, actor, message) => {
    expect(errorOf(() => planMspMemberRemoval({ actor, targetRoles, members }))?.message).toBe(message);
  });
});

describe("MSP invite expiry", () => {
  const now = 1_700_000_000;
  it.each([
    ["from the current expiry while it is ahead", now + 3600, now + 3600 + 14 * 86_400],
    ["from now once it has passed", now - 3600, now + 14 * 86_400],
  ])("extends by 14 days %s", (_label, current, extended) => {
    expect(extendedExpiry(current, now)).toBe(extended);
  });
});

describe("detach", () => {
  it.each([
    [0, "msp", "Cannot detach client, no independent owner"],
    [0, "client", "Cannot detach client, no independent owner"],
    [1, "msp", "Cannot detach client, billing is charged to the MSP"],
    [2, "client", undefined],
  ])("%i independent owner(s), billed to %s: %s", (independentOwners, billingTo, refusal) => {
    expect(detachRefusal({ independentOwners, billingTo })).toBe(refusal);
  });
});

describe("roles through the MSP path", () => {
  it.each([
    ["no roles", undefined, undefined, false, "Roles required"],
    [
      "owner granted by MSP staff",
      [],
      ["owner"],
      false,
      "Forbidden: only a system administrator assigns or removes the owner role through the MSP path",
    ],
    [
      "owner taken by MSP staff",
      ["owner", "admin"],
      ["admin"],
      false,
      "Forbidden: only a system administrator assigns or removes the owner role through the MSP path",
    ],
  ] as const)("refuses %s", (_label, current, requested, systemAdmin, message) => {
    expect(
      errorOf(() => planMspPathRoles({ currentRoles: current, requestedRoles: requested, systemAdmin }))
        ?.message,
    ).toBe(message);
  });

  it("keeps an owner's owner role when staff change other roles; a system admin assigns owner", () => {
    expect(
      planMspPathRoles({ currentRoles: ["owner"], requestedRoles: ["admin", "owner"], systemAdmin: false }),
    ).toEqual(["owner", "admin"]);
    expect(
      planMspPathRoles({ currentRoles: undefined, requestedRoles: ["owner"], systemAdmin: true }),
    ).toEqual(["owner"]);
  });
});

describe("the managed-client configuration after an update", () => {
  const current = clientConfigItemOf({
    pKey: "CLIENT#c",
    sKey: "CONFIG",
    clientId: "c",
    mspId: "m",
    billingTo: "msp",
    regionAccess: ["us-east-1", "eu-west-1"],
    budget: { current: 42, minimumTopUpThreshold: 5, maximumTopUpThreshold: 20 },
    configCreated: "t",
    configUpdated: "t",
  });
  const context = {
    mspRates: { apiSeconds: 0.8, storageGB: 0.7, aiTokens: 0.7, plan: 0.7 },
    regions: ["us-east-1", "eu-west-1"],
  };

  it("applies the pricing rules, keeps budget.current, sets limits, merges sharing", () => {
    const next = plannedConfiguration(
      current,
      {
        rates: { apiSeconds: 0.1 },
        budget: { minimumTopUpThreshold: 30 },
        limits: { requestsPerMinute: 10_000, requestsPerDay: null },
        sharing: { targets: true },
        regionAccess: ["eu-west-1", "eu-west-1"],
      },
      context,
    );
    expect(next.rates).toEqual({ apiSeconds: 0.8, storageGB: 1, aiTokens: 1, plan: 1 });
    expect(next.budget).toEqual({ current: 42, minimumTopUpThreshold: 30, maximumTopUpThreshold: 40 });
    expect(next.limits).toEqual({ requestsPerMinute: 10_000, requestsPerDay: null });
    expect(next.sharing).toEqual({
      proxyCredentials: false,
      targetCredentials: false,
      targets: true,
      proxies: false,
    });
    expect(next.regionAccess).toEqual(["eu-west-1"]);
  });

  it("leaves thresholds when the update bills the client; names regionAccess for an unknown region", () => {
    const next = plannedConfiguration(
      current,
      { billingTo: "client", budget: { minimumTopUpThreshold: 1 } },
      context,
    );
    expect(next.budget).toEqual(current.budget);
    const error = errorOf(() => plannedConfiguration(current, { regionAccess: ["ap-south-1"] }, context));
    expect(error?.status).toBe(400);
    expect(error?.body).toMatchObject({ fields: ["regionAccess"] });
  });
});

describe("what MSP staff reach through the Core API", () => {
  it.each([
    ["/api/clients/{clientId}/targets", "targets"],
    ["/api/clients/{clientId}/targets/{targetId}/rules", "targets"],
    ["/api/clients/{clientId}/proxies/{proxyId}/meters", "proxies"],
    ["/api/clients/{clientId}/credentials/{credentialId}/test", "credentials"],
    ["/api/clients/{clientId}/members", undefined],
    ["/api/clients/{clientId}", undefined],
    ["/api/clients/{clientId}/proxiesx", undefined],
  ])("%s is %s", (path, kind) => {
    expect(sharedKindOf(path)).toBe(kind);
  });

  it("credentials need both credential flags", () => {
    const none = { proxyCredentials: false, targetCredentials: false, targets: false, proxies: false };
    expect(isShared({ ...none, proxyCredentials: true }, "credentials")).toBe(false);
    expect(isShared({ ...none, proxyCredentials: true, targetCredentials: true }, "credentials")).toBe(true);
    expect(isShared({ ...none, proxies: true }, "proxies")).toBe(true);
    expect(isShared(none, "targets")).toBe(false);
  });
});
