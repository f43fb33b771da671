/**
 * The MSP entity: the MSP, its configuration, members and client links read as typed fields or
 * refused naming the field, and the access patterns against the emulator.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { PutCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import {
  findMsp,
  findMspClientLink,
  findMspMember,
  findMspWithConfig,
  findPendingMspInvite,
  findPendingMspInviteAddressedTo,
  listClientLinksOfMsp,
  listMembersOfMsp,
  listPendingInvitesOfMsp,
  listPendingMspInvitesAddressedTo,
  mspClientItemOf,
  mspConfigItemOf,
  mspInviteItemOf,
  mspItemOf,
  mspKeys,
  mspMemberItemOf,
} from "#lib/db/entities/msp.ts";
import { homeDb, homeRegion, tableName } from "#lib/db/store.ts";
import { provisionTable } from "#local/provision.ts";

const NOW = "2026-01-01T00:00:00.000Z";

const fixtures = (mspId: string) => ({
  msp: {
    ...mspKeys.item(mspId),
    entity: "msp",
    mspId,
    mspName: "Northwind Managed IT",
    createdBy: "u1",
    mspCreated: NOW,
    mspUpdated: NOW,
    memberVersion: 3,
  },
  config: {
    ...mspKeys.config(mspId),
    entity: "mspConfig",
    configurationType: "msp",
    mspId,
    billingType: "stripe",
    billingStatus: "active",
    promotionalCodes: [{ name: "launch", createdAt: NOW, expiresAt: NOW }],
    rates: { apiSeconds: 1, storageGB: 0.9, aiTokens: 1, plan: 0.8 },
    paymentCustomerId: "cus_1",
    paymentMethodOnFile: true,
    paymentMethodUpdated: NOW,
    paymentMethodEventAt: 1_700_000_000,
    configCreated: NOW,
    configUpdated: NOW,
  },
  member: (userId: string, roles: string[]) => ({
    ...mspKeys.member(mspId, userId),
    entity: "mspMember",
    mspId,
    userId,
    roles,
    memberCreated: NOW,
    memberUpdated: NOW,
  }),
  link: (clientId: string) => ({
    ...mspKeys.client(mspId, clientId),
    entity: "mspClient",
    mspId,
    clientId,
    linkedAt: NOW,
  }),
});

const put = (item: Record<string, unknown>) =>
  homeDb().send(new PutCommand({ TableName: tableName(), Item: item }));

describe("the MSP entity (readers)", () => {
  const f = fixtures("m");

  it("keys everything of an MSP in its partition", () => {
    expect(mspKeys.item("m")).toEqual({ pKey: "MSP#m", sKey: "MSP" });
    expect(mspKeys.config("m")).toEqual({ pKey: "MSP#m", sKey: "CONFIG" });
    expect(mspKeys.member("m", "u")).toEqual({ pKey: "MSP#m", sKey: "MEMBER#u" });
    expect(mspKeys.client("m", "c")).toEqual({ pKey: "MSP#m", sKey: "CLIENT#c" });
    expect(mspKeys.partition("m")).toBe("MSP#m");
  });

  it("reads each stored item as typed fields", () => {
    expect(mspItemOf(f.msp)).toEqual(f.msp);
    expect(mspConfigItemOf(f.config)).toEqual(f.config);
    const owner = f.member("u", ["msp_owner", "msp_admin"]);
    expect(mspMemberItemOf(owner)).toEqual(owner);
    expect(mspClientItemOf(f.link("c"))).toEqual(f.link("c"));
    // Promotional codes never written read as none.
    const { promotionalCodes: _codes, ...noCodes } = f.config;
    expect(mspConfigItemOf(noCodes).promotionalCodes).toBeNull();
    // Items written before the MSP API: no member version, no payment customer.
    const { memberVersion: _version, ...unversioned } = f.msp;
    expect(mspItemOf(unversioned).memberVersion).toBe(0);
    const { paymentCustomerId: _customer, ...noCustomer } = f.config;
    expect(mspConfigItemOf(noCustomer).paymentCustomerId).toBeNull();
    // Items written before an MSP could add a payment method in the console: none on file.
    const {
      paymentMethodOnFile: _onFile,
      paymentMethodUpdated: _updated,
      paymentMethodEventAt: _at,
      ...noMethod
    } = f.config;
    expect(mspConfigItemOf(noMethod)).toMatchObject({
      paymentMethodOnFile: false,
      paymentMethodUpdated: null,
      paymentMethodEventAt: null,
    });
  });

  it("refuses an item that is not what it should be, naming the field", () => {
    expect(() => mspItemOf({ ...f.msp, mspName: 7 })).toThrow(/mspName/);
    expect(() => mspItemOf(f.config)).toThrow(/entity/);
    expect(() => mspConfigItemOf({ ...f.config, billingType: "barter" })).toThrow(/billingType/);
    expect(() => mspConfigItemOf({ ...f.config, rates: { apiSeconds: 1 } })).toThrow(/rates\.storageGB/);
    expect(() => mspMemberItemOf(f.member("u", ["owner"]))).toThrow(/roles\.0/);
    const { clientId: _client, ...noClient } = f.link("c");
    expect(() => mspClientItemOf(noClient)).toThrow(/clientId/);
  });
});

describe("the MSP entity (access patterns)", () => {
  beforeAll(async () => {
    await provisionTable(homeRegion(), getConfig().tableName);
  });

  it("finds one member, one client link, the MSP alone; nothing for what is not stored", async () => {
    const mspId = randomUUID();
    const f = fixtures(mspId);
    const member = f.member("u1", ["msp_admin"]);
    await Promise.all([put(f.msp), put(member), put(f.link("c1"))]);
    expect(await findMsp(mspId)).toEqual(f.msp);
    expect(await findMspMember(mspId, "u1")).toEqual(member);
    expect(await findMspMember(mspId, "u2")).toBeUndefined();
    expect(await findMspClientLink(mspId, "c1")).toEqual(f.link("c1"));
    expect(await findMspClientLink(mspId, "c2")).toBeUndefined();
    expect(await findMsp(randomUUID())).toBeUndefined();
  });

  it("lists and finds pending MSP invites, by MSP and by invitee; expired ones are gone", async () => {
    const mspId = randomUUID();
    const email = `${randomUUID()}@example.test`;
    const invite = (inviteId: string, ttl: number) => ({
      ...mspKeys.invite(mspId, inviteId),
      ...mspKeys.inviteByEmail(email, inviteId),
      entity: "mspInvite",
      inviteId,
      mspId,
      mspName: "Northwind",
      roles: ["msp_user"],
      userEmail: email,
      inviteCreated: NOW,
      inviteUpdated: NOW,
      inviteExpiry: new Date(ttl * 1000).toISOString(),
      TTL: ttl,
    });
    const live = invite("i1", Math.floor(Date.now() / 1000) + 3600);
    const expired = invite("i2", Math.floor(Date.now() / 1000) - 60);
    await Promise.all([put(live), put(expired)]);
    expect(await listPendingInvitesOfMsp(mspId)).toEqual([live]);
    expect(await findPendingMspInvite(mspId, "i1")).toEqual(live);
    expect(await findPendingMspInvite(mspId, "i2")).toBeUndefined();
    expect(await listPendingMspInvitesAddressedTo(email.toUpperCase())).toEqual([live]);
    expect(await findPendingMspInviteAddressedTo(email, "i1")).toEqual(live);
    expect(await findPendingMspInviteAddressedTo("someone@example.test", "i1")).toBeUndefined();
    expect(() => mspInviteItemOf({ ...live, roles: ["admin"] })).toThrow(/roles\.0/);
  });

  it("finds an MSP with its configuration, and nothing for an unknown MSP", async () => {
    const mspId = randomUUID();
    const f = fixtures(mspId);
    await Promise.all([put(f.msp), put(f.config)]);
    expect(await findMspWithConfig(mspId)).toEqual({ msp: f.msp, config: f.config });
    expect(await findMspWithConfig(randomUUID())).toBeUndefined();

    const bare = randomUUID();
    await put(fixtures(bare).msp);
    expect(await findMspWithConfig(bare)).toEqual({ msp: fixtures(bare).msp, config: undefined });
  });

  it("lists an MSP's members and client links apart, each from its own sort-key prefix", async () => {
    const mspId = randomUUID();
    const f = fixtures(mspId);
    const members = [f.member("u1", ["msp_owner"]), f.member("u2", ["msp_reader"])];
    const links = [f.link("c1"), f.link("c2"), f.link("c3")];
    await Promise.all([f.msp, f.config, ...members, ...links].map(put));
    expect(await listMembersOfMsp(mspId)).toEqual(members);
    expect(await listClientLinksOfMsp(mspId)).toEqual(links);
    expect(await listMembersOfMsp(randomUUID())).toEqual([]);
  });
});
