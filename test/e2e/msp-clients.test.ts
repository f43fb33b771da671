/**
 * The MSP API's managed clients (spec 3, 4.14, 7) over real HTTP against the local stack, with the
 * payment processor on loopback (the real `stripe` package talks to it): creating, listing,
 * renaming and detaching clients; their members through the MSP path; their configuration and the
 * pricing rules; the MSP's own configuration; and MSP staff reaching a managed client through the
 * Core API.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { createMsp, setMspRates } from "#lib/domain/msps.ts";
import { setSystemAdmin } from "#lib/domain/users.ts";
import {
  type PaymentProcessor,
  type PaymentsEnvironment,
  startPaymentsEnvironment,
} from "../support/payment-processor.ts";
import { startTestStack, storedItem, type TestStack, type TestUser } from "../support/stack.ts";

const US = "us-east-1";
const VALIDATION = "Input failed data validation";

let stack: TestStack;
let processor: PaymentProcessor;
let payments: PaymentsEnvironment | undefined;
let sysadmin: TestUser;

beforeAll(async () => {
  payments = await startPaymentsEnvironment({ secretKey: "sk_test_msp" });
  processor = payments.processor;
  stack = await startTestStack();
  sysadmin = await stack.newUser();
  await setSystemAdmin(sysadmin.userId, true);
});
afterAll(async () => {
  await stack?.stop();
  await payments?.stop();
});

interface Msp {
  mspId: string;
  owner: TestUser;
  /** Staff by MSP role (each joined through an MSP invite over HTTP). */
  admin: TestUser;
  user: TestUser;
  reader: TestUser;
  customerId: string;
}

/** A user joins the MSP through the invite flow over HTTP. */
async function joinMsp(inviter: TestUser, mspId: string, user: TestUser, roles: string[]) {
  const invite = await inviter.api.post(`/api/msps/${mspId}/invites`, { userEmail: user.email, roles });
  expect(invite.status, JSON.stringify(invite.body)).toBe(201);
  const accepted = await user.api.put(
    `/api/users/${user.userId}/invites/${invite.body.invites[0].inviteId}`,
    {
      acceptInvite: true,
    },
  );
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
}

async function newMsp(name = "Northwind Managed IT"): Promise<Msp> {
  const owner = await stack.newUser();
  const { msp } = await createMsp({ name, ownerUserId: owner.userId });
  const [admin, user, reader] = await Promise.all([stack.newUser(), stack.newUser(), stack.newUser()]);
  await joinMsp(owner, msp.mspId, admin, ["msp_admin"]);
  await joinMsp(owner, msp.mspId, user, ["msp_user"]);
  await joinMsp(owner, msp.mspId, reader, ["msp_reader"]);
  const config = await storedItem(keys.mspConfig(msp.mspId));
  return { mspId: msp.mspId, owner, admin, user, reader, customerId: String(config?.paymentCustomerId) };
}

async function newManagedClient(msp: Msp, clientName = "Contoso"): Promise<string> {
  const made = await msp.admin.api.post(`/api/msps/${msp.mspId}/clients`, { clientName });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return made.body.client.clientId as string;
}

const clientPath = (msp: Msp, clientId: string) => `/api/msps/${msp.mspId}/clients/${clientId}`;

describe("managed clients", () => {
  let msp: Msp;
  beforeAll(async () => {
    msp = await newMsp();
  });

  it("POST creates a client linked to the MSP, billed to it, with the default configuration", async () => {
    const made = await msp.admin.api.post(`/api/msps/${msp.mspId}/clients`, { clientName: "  Contoso  " });
    expect(made.status).toBe(201);
    expect(made.body).toEqual({
      message: "Client created",
      client: {
        clientId: expect.any(String),
        clientName: "Contoso",
        clientCreated: expect.any(String),
        clientUpdated: expect.any(String),
      },
    });
    const { clientId } = made.body.client;
    const config = await storedItem(keys.clientConfig(clientId));
    expect(config).toMatchObject({
      mspId: msp.mspId,
      billingTo: "msp",
      billingType: "stripe",
      topUpMethod: "manual",
      regionAccess: ["us-east-1", "eu-west-1"],
      sharing: { proxyCredentials: true, targetCredentials: true, targets: true, proxies: true },
      budget: { current: 0, minimumTopUpThreshold: 5, maximumTopUpThreshold: 20 },
      paymentProvisioning: "provisioned",
    });
    expect(processor.customers.get(String(config?.paymentCustomerId))?.metadata).toEqual({ clientId });
    expect(await storedItem(keys.mspClient(msp.mspId, clientId))).toMatchObject({
      linkedAt: expect.any(String),
    });
    expect(await storedItem(keys.client(clientId))).toMatchObject({ memberCount: 0, ownerCount: 0 });
  });

  it("lists and gets managed clients for msp_reader; the GET shape is documented", async () => {
    const clientId = await newManagedClient(msp, "Fabrikam");
    const list = await msp.reader.api.get(`/api/msps/${msp.mspId}/clients`);
    expect(list.status).toBe(200);
    expect(list.body.clients).toContainEqual({
      clientId,
      clientName: "Fabrikam",
      clientCreated: expect.any(String),
      clientUpdated: expect.any(String),
    });
    expect(list.body.pagination).toMatchObject({ page: 1, limit: 20 });
    const one = await msp.reader.api.get(clientPath(msp, clientId));
    expect(one.status).toBe(200);
    expect(one.body.clients).toEqual([
      {
        clientId,
        clientName: "Fabrikam",
        clientStatus: "active",
        clientMembers: [],
        mspId: msp.mspId,
        mspLinkedAt: expect.any(String),
        billingTo: "msp",
        billingStatus: "active",
        planTier: "basic",
        planStatus: "active",
        clientCreated: expect.any(String),
        clientUpdated: expect.any(String),
      },
    ]);
  });

  it("PUT renames (clientName optional) and answers `client`", async () => {
    const clientId = await newManagedClient(msp);
    const renamed = await msp.admin.api.put(clientPath(msp, clientId), { clientName: "Contoso EU" });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({
      message: "Client updated",
      client: { clientId, clientName: "Contoso EU", clientUpdated: expect.any(String) },
    });
    const unchanged = await msp.admin.api.put(clientPath(msp, clientId), {});
    expect(unchanged.body.client.clientName).toBe("Contoso EU");
    expect((await msp.admin.api.put(clientPath(msp, clientId), { clientId: "x" })).status).toBe(400);
  });

  it("role boundaries: msp_user and msp_reader get 403 Forbidden on msp_admin routes; a non-member 404", async () => {
    const clientId = await newManagedClient(msp);
    for (const caller of [msp.user, msp.reader]) {
      const post = await caller.api.post(`/api/msps/${msp.mspId}/clients`, { clientName: "Nope" });
      expect(post.status).toBe(403);
      expect(post.body.message).toBe("Forbidden");
      expect((await caller.api.put(clientPath(msp, clientId), { clientName: "x" })).status).toBe(403);
      expect((await caller.api.delete(clientPath(msp, clientId))).status).toBe(403);
    }
    const outsider = await stack.newUser();
    const denied = await outsider.api.get(`/api/msps/${msp.mspId}/clients`);
    expect(denied.status).toBe(404);
    expect(denied.body.message).toBe("MSP not found");
    expect((await outsider.api.get(`/api/msps/${randomUUID()}/clients`)).status).toBe(404);
  });

  it("a client the MSP does not manage is 404 `Client not found`, also another MSP's", async () => {
    const other = await newMsp("Other MSP");
    const theirs = await newManagedClient(other);
    for (const path of [
      clientPath(msp, theirs),
      clientPath(msp, randomUUID()),
      `${clientPath(msp, theirs)}/members`,
    ]) {
      const response = await msp.admin.api.get(path);
      expect(response.status, path).toBe(404);
      expect(response.body.message).toBe("Client not found");
    }
  });

  it("a system administrator acts as msp_owner on any MSP", async () => {
    const list = await sysadmin.api.get(`/api/msps/${msp.mspId}/clients`);
    expect(list.status).toBe(200);
    expect((await sysadmin.api.get(`/api/msps/${randomUUID()}/clients`)).status).toBe(404);
  });
});

describe("members of a managed client through the MSP path", () => {
  let msp: Msp;
  let clientId: string;
  beforeAll(async () => {
    msp = await newMsp();
    clientId = await newManagedClient(msp);
  });
  const membersPath = (userId?: string) =>
    `${clientPath(msp, clientId)}/members${userId ? `/${userId}` : ""}`;

  it("PUT adds MSP staff with client roles; GET and the list show them without phone", async () => {
    const put = await msp.admin.api.put(membersPath(msp.user.userId), { roles: ["devops", "admin"] });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const shape = {
      userId: msp.user.userId,
      roles: ["admin", "devops"],
      userEmail: msp.user.email,
      userFirstName: expect.any(String),
      userLastName: expect.any(String),
      userCreated: expect.any(String),
      userUpdated: expect.any(String),
    };
    expect(put.body.members).toEqual([shape]);
    expect((await msp.reader.api.get(membersPath(msp.user.userId))).body.members).toEqual([shape]);
    const list = await msp.reader.api.get(membersPath());
    expect(list.body.members).toEqual([shape]);
    expect(list.body.members[0]).not.toHaveProperty("userPhone");
    expect(await storedItem(keys.client(clientId))).toMatchObject({
      memberCount: 1,
      adminCount: 1,
      ownerCount: 0,
    });
    const user = await storedItem(keys.user(msp.user.userId));
    expect([...((user?.userClients as Set<string> | undefined) ?? [])]).toContain(clientId);
    // and the role change of an existing member
    const changed = await msp.admin.api.put(membersPath(msp.user.userId), { roles: ["reader"] });
    expect(changed.body.members[0].roles).toEqual(["reader"]);
    expect(await storedItem(keys.client(clientId))).toMatchObject({ memberCount: 1, adminCount: 0 });
  });

  it("roles: none is 400 `Roles required`; an unknown role is 400 naming the field", async () => {
    for (const body of [{}, { roles: [] }]) {
      const response = await msp.admin.api.put(membersPath(msp.admin.userId), body);
      expect(response.status).toBe(400);
      expect(response.body.message).toBe("Roles required");
    }
    const unknown = await msp.admin.api.put(membersPath(msp.admin.userId), { roles: ["superuser"] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toBe(VALIDATION);
    expect(unknown.body.fields).toEqual(["roles.0"]);
  });

  it("only a system administrator assigns the owner role; an owner cannot be removed here", async () => {
    const customer = await stack.newUser();
    const byAdmin = await msp.owner.api.put(membersPath(msp.owner.userId), { roles: ["owner"] });
    expect(byAdmin.status).toBe(403);
    // a user who is neither a member nor staff: only a system administrator adds them
    expect((await msp.admin.api.put(membersPath(customer.userId), { roles: ["admin"] })).status).toBe(404);
    const assigned = await sysadmin.api.put(membersPath(customer.userId), { roles: ["owner", "admin"] });
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(200);
    const removeOwner = await msp.admin.api.delete(membersPath(customer.userId));
    expect(removeOwner.status).toBe(403);
    expect(removeOwner.body.message).toBe("Forbidden: an owner cannot be removed through the MSP path");
    const demote = await msp.admin.api.put(membersPath(customer.userId), { roles: ["admin"] });
    expect(demote.status).toBe(403);
    // the client's own owner now reaches it through the Core API
    expect((await customer.api.get(`/api/clients/${clientId}`)).status).toBe(200);
  });

  it("DELETE removes a member (userClients updated); msp_user may not; unknown member 404", async () => {
    const staff = await stack.newUser();
    await joinMsp(msp.owner, msp.mspId, staff, ["msp_reader"]);
    expect((await msp.admin.api.put(membersPath(staff.userId), { roles: ["user"] })).status).toBe(200);
    expect((await msp.user.api.delete(membersPath(staff.userId))).status).toBe(403);
    const removed = await msp.admin.api.delete(membersPath(staff.userId));
    expect(removed.status).toBe(200);
    expect(await storedItem(keys.member(clientId, staff.userId))).toBeUndefined();
    const user = await storedItem(keys.user(staff.userId));
    expect([...((user?.userClients as Set<string> | undefined) ?? [])]).not.toContain(clientId);
    const again = await msp.admin.api.delete(membersPath(staff.userId));
    expect(again.status).toBe(404);
    expect(again.body.message).toBe("Member not found");
  });
});

describe("detach (spec 3)", () => {
  it("409 without an independent owner, 409 while billed to the MSP; then detached, keeping everything", async () => {
    const msp = await newMsp();
    const clientId = await newManagedClient(msp);
    const path = clientPath(msp, clientId);
    const noOwner = await msp.admin.api.delete(path);
    expect(noOwner.status).toBe(409);
    expect(noOwner.body.message).toBe("Cannot detach client, no independent owner");
    // MSP staff as owner is not independent
    expect((await sysadmin.api.put(`${path}/members/${msp.user.userId}`, { roles: ["owner"] })).status).toBe(
      200,
    );
    expect((await msp.admin.api.delete(path)).body.message).toBe(
      "Cannot detach client, no independent owner",
    );
    const customer = await stack.newUser();
    expect((await sysadmin.api.put(`${path}/members/${customer.userId}`, { roles: ["owner"] })).status).toBe(
      200,
    );
    const billed = await msp.admin.api.delete(path);
    expect(billed.status).toBe(409);
    expect(billed.body.message).toBe("Cannot detach client, billing is charged to the MSP");
    expect((await msp.admin.api.put(`${path}/configurations`, { billingTo: "client" })).status).toBe(200);
    const detached = await msp.admin.api.delete(path);
    expect(detached.status, JSON.stringify(detached.body)).toBe(200);
    expect(detached.body).toEqual({ message: "Client detached" });
    expect(await storedItem(keys.mspClient(msp.mspId, clientId))).toBeUndefined();
    expect(await storedItem(keys.clientConfig(clientId))).toMatchObject({ mspId: null, billingTo: "client" });
    expect((await msp.admin.api.get(path)).status).toBe(404);
    const kept = await customer.api.get(`/api/clients/${clientId}`);
    expect(kept.status).toBe(200);
    expect(kept.body.clients[0].clientMembers).toHaveLength(2);
  });
});

describe("configurations", () => {
  let msp: Msp;
  let clientId: string;
  beforeAll(async () => {
    msp = await newMsp();
    clientId = await newManagedClient(msp);
    await setMspRates(msp.mspId, { apiSeconds: 0.8, storageGB: 0.6, aiTokens: 0.9, plan: 0.75 });
  });
  const configPath = () => `${clientPath(msp, clientId)}/configurations`;

  it("GET the client's configuration needs msp_user", async () => {
    expect((await msp.reader.api.get(configPath())).status).toBe(403);
    const got = await msp.user.api.get(configPath());
    expect(got.status).toBe(200);
    expect(got.body.configuration).toMatchObject({
      configurationType: "client",
      clientId,
      mspId: msp.mspId,
      billingTo: "msp",
      rates: { apiSeconds: 1, storageGB: 1, aiTokens: 1, plan: 1 },
      budget: { current: 0, minimumTopUpThreshold: 5, maximumTopUpThreshold: 20 },
    });
  });

  it("rates: clamped into [0.7, 1], never below the MSP's; an omitted metric keeps its value", async () => {
    const put = await msp.admin.api.put(configPath(), {
      rates: { apiSeconds: 0.5, storageGB: 0.65, aiTokens: 1.4 },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.configuration.rates).toEqual({ apiSeconds: 0.8, storageGB: 0.7, aiTokens: 1, plan: 1 });
    const next = await msp.admin.api.put(configPath(), { rates: { plan: 0.72 } });
    expect(next.body.configuration.rates).toEqual({
      apiSeconds: 0.8,
      storageGB: 0.7,
      aiTokens: 1,
      plan: 0.75,
    });
    expect((await storedItem(keys.clientConfig(clientId)))?.rates).toEqual(next.body.configuration.rates);
    expect(Object.keys(next.body.configuration).sort()).toEqual(
      [
        "billingTo",
        "billingType",
        "budget",
        "clientId",
        "configUpdated",
        "limits",
        "rates",
        "regionAccess",
        "sharing",
        "topUpMethod",
      ].sort(),
    );
  });

  it("budget thresholds are raised while billed to the MSP by Stripe; budget.current is never set", async () => {
    const raised = await msp.admin.api.put(configPath(), {
      budget: { minimumTopUpThreshold: 12, maximumTopUpThreshold: 15 },
    });
    expect(raised.body.configuration.budget).toEqual({
      current: 0,
      minimumTopUpThreshold: 12,
      maximumTopUpThreshold: 22,
    });
    const low = await msp.admin.api.put(configPath(), { budget: { minimumTopUpThreshold: 1 } });
    expect(low.body.configuration.budget).toMatchObject({
      minimumTopUpThreshold: 5,
      maximumTopUpThreshold: 22,
    });
    const current = await msp.admin.api.put(configPath(), { budget: { current: 500 } });
    expect(current.status).toBe(400);
    expect(current.body.fields).toEqual(["budget.current"]);
    expect((await storedItem(keys.clientConfig(clientId)))?.budget).toMatchObject({ current: 0 });
  });

  it("billed to the client: thresholds unchanged; switching back to msp needs a payment method on file", async () => {
    const toClient = await msp.admin.api.put(configPath(), {
      billingTo: "client",
      budget: { minimumTopUpThreshold: 1, maximumTopUpThreshold: 2 },
    });
    expect(toClient.status).toBe(200);
    expect(toClient.body.configuration.budget).toMatchObject({
      minimumTopUpThreshold: 5,
      maximumTopUpThreshold: 22,
    });
    const refused = await msp.admin.api.put(configPath(), { billingTo: "msp" });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe("Cannot bill to MSP: no payment method on file");
    expect((await storedItem(keys.clientConfig(clientId)))?.billingTo).toBe("client");
    // the processor was asked about the MSP's own customer
    expect(
      processor.requests.some((r) => r.method === "GET" && r.path === `/v1/customers/${msp.customerId}`),
    ).toBe(true);
    // the processor failing (every retry of the stripe package) is a 502, and nothing changes
    for (let attempt = 0; attempt < 3; attempt++) processor.failNext(500);
    const unreachable = await msp.admin.api.put(configPath(), { billingTo: "msp" });
    expect(unreachable.status).toBe(502);
    expect(unreachable.body.message).toBe("The payment processor could not be reached; try again");
    expect((await storedItem(keys.clientConfig(clientId)))?.billingTo).toBe("client");
    processor.setDefaultPaymentMethod(msp.customerId, "pm_card_visa");
    const accepted = await msp.admin.api.put(configPath(), { billingTo: "msp" });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body.configuration.billingTo).toBe("msp");
  });

  it("other fields: billingType only stripe, known regions, limits at most the maximum, sharing; 400s name the field", async () => {
    const invoice = await msp.admin.api.put(configPath(), { billingType: "invoice" });
    expect(invoice.status).toBe(400);
    expect(invoice.body.fields).toEqual(["billingType"]);
    const region = await msp.admin.api.put(configPath(), { regionAccess: ["us-east-1", "mars-1"] });
    expect(region.status).toBe(400);
    expect(region.body.fields).toEqual(["regionAccess"]);
    const over = await msp.admin.api.put(configPath(), { limits: { requestsPerMinute: 50_000_000 } });
    expect(over.status).toBe(400);
    expect(over.body.fields).toEqual(["limits.requestsPerMinute"]);
    const put = await msp.admin.api.put(configPath(), {
      billingType: "stripe",
      topUpMethod: "automatic",
      regionAccess: [US],
      limits: { requestsPerMinute: 10_000, requestsPerDay: 1000 },
      sharing: { targets: false },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.configuration).toMatchObject({
      topUpMethod: "automatic",
      regionAccess: [US],
      limits: { requestsPerMinute: 10_000, requestsPerDay: 1000 },
      sharing: { proxyCredentials: true, targetCredentials: true, targets: false, proxies: true },
    });
    expect((await msp.user.api.put(configPath(), { topUpMethod: "manual" })).status).toBe(403);
  });

  it("the MSP's own configuration: msp_user reads it; msp_admin sets promotional codes, never rates or billing", async () => {
    const path = `/api/msps/${msp.mspId}/configurations`;
    expect((await msp.reader.api.get(path)).status).toBe(403);
    const got = await msp.user.api.get(`${path}?configurationType=msp`);
    expect(got.status).toBe(200);
    expect(got.body.configuration).toEqual({
      configurationType: "msp",
      mspId: msp.mspId,
      billingType: "stripe",
      billingStatus: "active",
      paymentMethodOnFile: false,
      paymentMethodUpdated: null,
      promotionalCodes: null,
      rates: { apiSeconds: 0.8, storageGB: 0.6, aiTokens: 0.9, plan: 0.75 },
      configCreated: expect.any(String),
      configUpdated: expect.any(String),
    });
    expect((await msp.user.api.get(`${path}?configurationType=client`)).status).toBe(400);
    const codes = await msp.admin.api.put(path, {
      promotionalCodes: [{ name: "launch", expiresAt: "2027-01-01T00:00:00.000Z" }],
    });
    expect(codes.status, JSON.stringify(codes.body)).toBe(200);
    expect(codes.body.configuration.promotionalCodes).toEqual([
      { name: "launch", createdAt: expect.any(String), expiresAt: "2027-01-01T00:00:00.000Z" },
    ]);
    for (const field of ["rates", "billingType", "billingStatus"]) {
      const refused = await msp.admin.api.put(path, {
        [field]: field === "rates" ? { plan: 0.1 } : "invoice",
      });
      expect(refused.status).toBe(400);
      expect(refused.body.fields).toEqual([field]);
    }
    expect((await msp.user.api.put(path, { promotionalCodes: null })).status).toBe(403);
  });
});

describe("MSP staff through the Core API", () => {
  it("act as devops (admin, owner), user, reader on what the client shares; outsiders and detached: 404", async () => {
    const msp = await newMsp();
    const clientId = await newManagedClient(msp);
    const targets = `/api/clients/${clientId}/targets`;
    const target = {
      targetName: "api",
      targetRegion: US,
      targetBaseURL: "https://api.example.com",
      targetTestPath: "/",
    };
    const made = await msp.admin.api.post(targets, target);
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect((await msp.owner.api.post(targets, target)).status).toBe(201);
    expect((await msp.reader.api.get(targets)).status).toBe(200);
    const readerPost = await msp.reader.api.post(targets, target);
    expect(readerPost.status).toBe(403);
    expect((await msp.user.api.post(targets, target)).status).toBe(403);
    expect((await msp.reader.api.get(`/api/clients/${clientId}`)).status).toBe(200);
    // people are managed through the MSP path, not the Core API's admin routes
    expect((await msp.owner.api.get(`/api/clients/${clientId}/invites`)).status).toBe(403);
    const outsider = await stack.newUser();
    expect((await outsider.api.get(targets)).status).toBe(404);
    // sharing closes a kind
    await msp.admin.api.put(`${clientPath(msp, clientId)}/configurations`, { sharing: { targets: false } });
    const closed = await msp.admin.api.get(targets);
    expect(closed.status).toBe(403);
    expect(closed.body.message).toBe("Forbidden: the client does not share its targets with its MSP");
    expect((await msp.admin.api.get(`/api/clients/${clientId}/proxies`)).status).toBe(200);
    await msp.admin.api.put(`${clientPath(msp, clientId)}/configurations`, {
      sharing: { targetCredentials: false },
    });
    expect((await msp.admin.api.get(`/api/clients/${clientId}/credentials`)).status).toBe(403);
    // after a detach the MSP's staff no longer reach it
    expect(
      (
        await sysadmin.api.put(`${clientPath(msp, clientId)}/members/${outsider.userId}`, {
          roles: ["owner"],
        })
      ).status,
    ).toBe(200);
    await msp.admin.api.put(`${clientPath(msp, clientId)}/configurations`, { billingTo: "client" });
    expect((await msp.admin.api.delete(clientPath(msp, clientId))).status).toBe(200);
    const gone = await msp.admin.api.get(`/api/clients/${clientId}/proxies`);
    expect(gone.status).toBe(404);
    expect(gone.body.message).toBe("Client not found");
    expect((await outsider.api.get(targets)).status).toBe(200);
  });
});
