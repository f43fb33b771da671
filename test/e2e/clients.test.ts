/** Clients (spec 4.1) over real HTTP against the local stack. */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { PutCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { keys } from "#lib/db/keys.ts";
import { purgeDueAccounts } from "#lib/domain/account-deletion.ts";
import { seedingConfig } from "../support/config-atomicity.ts";
import { joinClient, startTestStack, storedItem, type TestStack, type TestUser } from "../support/stack.ts";

let stack: TestStack;
let owner: TestUser;

beforeAll(async () => {
  stack = await startTestStack();
  owner = await stack.newUser();
});
afterAll(async () => {
  await stack?.stop();
});

async function createClient(user: TestUser, clientName = "Acme") {
  const response = await user.api.post("/api/clients", { clientName });
  expect(response.status).toBe(201);
  return response.body.clients[0] as { clientId: string; clientName: string };
}

describe("POST /api/clients", () => {
  it("creates the client, makes the creator owner and admin, and records it on the user in one go", async () => {
    const response = await owner.api.post("/api/clients", { clientName: "  Acme Corp  " });
    expect(response.status).toBe(201);
    expect(response.body.message).toEqual(expect.any(String));
    expect(response.body.clients).toHaveLength(1);
    const client = response.body.clients[0];
    expect(client).toMatchObject({
      clientId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      clientName: "Acme Corp",
      clientMembers: [{ userId: owner.userId, roles: ["owner", "admin"] }],
      clientCreated: expect.any(String),
      clientUpdated: expect.any(String),
    });
    expect(response.body.users).toBeUndefined();

    const stored = await storedItem(keys.client(client.clientId));
    expect(stored).toMatchObject({ clientName: "Acme Corp", memberCount: 1, adminCount: 1, ownerCount: 1 });
    const member = await storedItem(keys.member(client.clientId, owner.userId));
    expect(member?.roles).toEqual(["owner", "admin"]);
    const user = await storedItem(keys.user(owner.userId));
    expect([...((user?.userClients as Set<string> | undefined) ?? [])]).toContain(client.clientId);
  });

  it("creates the configuration record: basic plan, active billing, provisioning skipped without a key", async () => {
    const client = await createClient(owner, "Configured");
    const config = await storedItem(keys.clientConfig(client.clientId));
    expect(config).toMatchObject({
      clientId: client.clientId,
      planTier: "basic",
      planStatus: "active",
      billingStatus: "active",
      billingTo: "client",
      billingType: "stripe",
      regionAccess: getConfig().regions,
      paymentProvisioning: "skipped",
      paymentCustomerId: null,
      paymentProvisioningReason: "no payment processor key configured",
    });
  });

  it("returns the updated user when returnUser is true", async () => {
    const response = await owner.api.post("/api/clients", { clientName: "With user", returnUser: true });
    expect(response.status).toBe(201);
    const clientId = response.body.clients[0].clientId;
    expect(response.body.users).toHaveLength(1);
    expect(response.body.users[0].userId).toBe(owner.userId);
    expect(response.body.users[0].userClients).toContain(clientId);
    expect(JSON.stringify(response.body.users[0])).not.toContain(owner.token);
  });

  it.each([
    [{}, ["clientName"]],
    [{ clientName: "" }, ["clientName"]],
    [{ clientName: "x".repeat(129) }, ["clientName"]],
    [{ clientName: 42 }, ["clientName"]],
    [{ clientName: "ok", returnUser: "yes" }, ["returnUser"]],
    [{ clientName: "ok", plan: "team" }, ["plan"]],
  ])("rejects %j with 400 naming %j", async (body, fields) => {
    const response = await owner.api.post("/api/clients", body);
    expect(response.status).toBe(400);
    expect(response.body.message).toBe("Input failed data validation");
    expect(response.body.fields).toEqual(fields);
  });

  it("rejects a body that is not JSON with 400", async () => {
    const response = await owner.api.post("/api/clients", "{not json");
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ message: "Input failed data validation", fields: ["body"] });
  });
});

describe("GET /api/clients and /api/clients/{clientId}", () => {
  it("lists only the caller's clients, paginated", async () => {
    const lister = await stack.newUser();
    const created = [];
    for (const name of ["One", "Two", "Three"]) created.push(await createClient(lister, name));
    await createClient(owner, "Not theirs");

    const all = await lister.api.get("/api/clients");
    expect(all.status).toBe(200);
    expect(all.body.clients.map((c: { clientId: string }) => c.clientId).sort()).toEqual(
      created.map((c) => c.clientId).sort(),
    );
    expect(all.body.pagination).toEqual({ page: 1, limit: 20, total: 3, pages: 1 });

    const page2 = await lister.api.get("/api/clients?page=2&limit=2");
    expect(page2.body.clients).toHaveLength(1);
    expect(page2.body.pagination).toEqual({ page: 2, limit: 2, total: 3, pages: 2 });

    const bad = await lister.api.get("/api/clients?limit=101");
    expect(bad.status).toBe(400);
    expect(bad.body.fields).toEqual(["limit"]);
  });

  it("gets a client for a member, and 404 for a non-member exactly as for an unknown id", async () => {
    const client = await createClient(owner, "Visible");
    const got = await owner.api.get(`/api/clients/${client.clientId}`);
    expect(got.status).toBe(200);
    expect(got.body.clients[0]).toMatchObject({ clientId: client.clientId, clientName: "Visible" });

    const stranger = await stack.newUser();
    const hidden = await stranger.api.get(`/api/clients/${client.clientId}`);
    const unknown = await stranger.api.get("/api/clients/00000000-0000-4000-8000-000000000000");
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ message: "Client not found" });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(hidden.body);
  });
});

describe("PUT /api/clients/{clientId}", () => {
  it("renames the client for an admin, optionally returning the user", async () => {
    const client = await createClient(owner, "Old name");
    const response = await owner.api.put(`/api/clients/${client.clientId}`, {
      clientName: "New name",
      returnUser: true,
    });
    expect(response.status).toBe(200);
    expect(response.body.clients[0].clientName).toBe("New name");
    expect(response.body.users[0].userId).toBe(owner.userId);
    expect((await storedItem(keys.client(client.clientId)))?.clientName).toBe("New name");
  });

  it("only lets the name change (400 naming any other field)", async () => {
    const client = await createClient(owner);
    const response = await owner.api.put(`/api/clients/${client.clientId}`, {
      clientName: "x",
      clientId: "other",
    });
    expect(response.status).toBe(400);
    expect(response.body.fields).toEqual(["clientId"]);
    const missing = await owner.api.put(`/api/clients/${client.clientId}`, {});
    expect(missing.status).toBe(400);
    expect(missing.body.fields).toEqual(["clientName"]);
  });

  it("refuses a plain user (403) and a non-member (404)", async () => {
    const client = await createClient(owner);
    const member = await stack.newUser();
    await joinClient(owner, client.clientId, member, "user");
    const asUser = await member.api.put(`/api/clients/${client.clientId}`, { clientName: "Hijack" });
    expect(asUser.status).toBe(403);
    expect(asUser.body.message).toBe("Forbidden: requires the admin role");
    const stranger = await stack.newUser();
    expect((await stranger.api.put(`/api/clients/${client.clientId}`, { clientName: "Hijack" })).status).toBe(
      404,
    );
    expect((await storedItem(keys.client(client.clientId)))?.clientName).toBe("Acme");
  });
});

describe("DELETE /api/clients/{clientId}", () => {
  it("is refused with the spec's 403 while another admin exists", async () => {
    const client = await createClient(owner, "Shared");
    const other = await stack.newUser();
    await joinClient(owner, client.clientId, other, "admin");
    const response = await owner.api.delete(`/api/clients/${client.clientId}`, { immediatelyDelete: true });
    expect(response.status).toBe(403);
    expect(response.body.message).toBe("Cannot delete client, not the sole admin");
    expect(await storedItem(keys.client(client.clientId))).toBeDefined();
  });

  it("is refused for a plain user", async () => {
    const client = await createClient(owner, "Guarded");
    const member = await stack.newUser();
    await joinClient(owner, client.clientId, member, "user");
    const response = await member.api.delete(`/api/clients/${client.clientId}`);
    expect(response.status).toBe(403);
    expect(await storedItem(keys.client(client.clientId))).toBeDefined();
  });

  it("with immediatelyDelete true removes the client and everything under it in every region", async () => {
    const client = await createClient(owner, "Doomed");
    const member = await stack.newUser();
    await joinClient(owner, client.clientId, member, "user");
    const { tableName, regions } = getConfig();
    // Region-bound resources as later features store them, in both regions.
    for (const region of regions) {
      const put = (item: Record<string, unknown>) =>
        seedingConfig(() => dynamo(region).send(new PutCommand({ TableName: tableName, Item: item })));
      await put({ ...keys.credential(client.clientId, `cred-${region}`), entity: "credential" });
      await put({ ...keys.target(client.clientId, `target-${region}`), entity: "target" });
      await put({ ...keys.proxy(client.clientId, `proxy-${region}`), entity: "proxy" });
      await put({ ...keys.rule(client.clientId, `proxy-${region}`, "rule1"), entity: "rule" });
      await put({ ...keys.requestLog(`proxy-${region}`, "0190-req"), entity: "requestLog" });
      await put({
        ...keys.proxyRuntime(`proxy-${region}`),
        entity: "proxyLocator",
        clientId: client.clientId,
      });
      await put({ pKey: keys.clientTelemetryPartition(client.clientId, "hour"), sKey: "2026-01-01-00" });
    }

    const response = await owner.api.delete(`/api/clients/${client.clientId}`, { immediatelyDelete: true });
    expect(response.status).toBe(200);
    expect(response.body.message).toBe("Client deleted");

    for (const region of regions) {
      expect(await storedItem(keys.credential(client.clientId, `cred-${region}`), region)).toBeUndefined();
      expect(await storedItem(keys.target(client.clientId, `target-${region}`), region)).toBeUndefined();
      expect(await storedItem(keys.proxy(client.clientId, `proxy-${region}`), region)).toBeUndefined();
      expect(
        await storedItem(keys.rule(client.clientId, `proxy-${region}`, "rule1"), region),
      ).toBeUndefined();
      expect(await storedItem(keys.requestLog(`proxy-${region}`, "0190-req"), region)).toBeUndefined();
      expect(await storedItem(keys.proxyRuntime(`proxy-${region}`), region)).toBeUndefined();
      expect(
        await storedItem(
          { pKey: keys.clientTelemetryPartition(client.clientId, "hour"), sKey: "2026-01-01-00" },
          region,
        ),
      ).toBeUndefined();
    }
    expect(await storedItem(keys.client(client.clientId))).toBeUndefined();
    expect(await storedItem(keys.clientConfig(client.clientId))).toBeUndefined();
    expect(await storedItem(keys.member(client.clientId, member.userId))).toBeUndefined();
    const memberUser = await storedItem(keys.user(member.userId));
    expect([...((memberUser?.userClients as Set<string>) ?? [])]).not.toContain(client.clientId);
    expect(await storedItem(keys.deletedClient(client.clientId))).toMatchObject({
      clientName: "Doomed",
      deletedBy: owner.userId,
    });
    expect((await owner.api.get(`/api/clients/${client.clientId}`)).status).toBe(404);
  });

  it("by default marks the client for deletion; the scheduled purge deletes it when due", async () => {
    const client = await createClient(owner, "Later");
    const response = await owner.api.delete(`/api/clients/${client.clientId}`);
    expect(response.status).toBe(200);
    expect(response.body.message).toMatch(/^Client marked for deletion/);
    const due = response.body.clientDeletionScheduledAt as string;
    expect(new Date(due).getTime()).toBeGreaterThan(Date.now() + 29 * 86_400_000);

    const got = await owner.api.get(`/api/clients/${client.clientId}`);
    expect(got.body.clients[0]).toMatchObject({
      clientStatus: "pendingDeletion",
      clientDeletionScheduledAt: due,
    });

    // Not due yet: nothing happens.
    await purgeDueAccounts(new Date());
    expect(await storedItem(keys.client(client.clientId))).toBeDefined();
    // Once due, the hourly job purges it.
    const result = await purgeDueAccounts(new Date(new Date(due).getTime() + 1000));
    expect(result.clients).toBeGreaterThanOrEqual(1);
    expect(await storedItem(keys.client(client.clientId))).toBeUndefined();
  });

  it("rejects a non-boolean immediatelyDelete", async () => {
    const client = await createClient(owner, "Typed");
    const response = await owner.api.delete(`/api/clients/${client.clientId}`, { immediatelyDelete: "yes" });
    expect(response.status).toBe(400);
    expect(response.body.fields).toEqual(["immediatelyDelete"]);
  });
});
