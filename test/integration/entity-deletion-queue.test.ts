/**
 * The deletion queue: client and user items queued with their GSI2 keys, read back as typed
 * entries when due (against the emulator), and a broken entry returned apart, not thrown.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { PutCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import {
  deletionQueueEntryOf,
  deletionQueueKeys,
  listDueDeletions,
  queueForDeletion,
} from "#lib/db/entities/deletion-queue.ts";
import { keys } from "#lib/db/keys.ts";
import { homeDb, homeRegion, tableName } from "#lib/db/store.ts";
import { provisionTable } from "#local/provision.ts";
import { storedItem } from "../support/stack.ts";

const put = (item: Record<string, unknown>) =>
  homeDb().send(new PutCommand({ TableName: tableName(), Item: item }));

// Every test queues in its own far-past year so no other test's entries are due with it.
const DUE = "1971-03-01T00:00:00.000Z";

describe("the deletion queue (readers)", () => {
  const client = {
    ...keys.client("c"),
    entity: "client",
    clientId: "c",
    ...deletionQueueKeys.entry("CLIENT", DUE, keys.client("c")),
    deletionRequestedBy: "u",
  };

  it("keys an entry by its queue, due time and item", () => {
    expect(deletionQueueKeys.entry("USER", DUE, keys.user("u"))).toEqual({
      gsi2pk: "DELETION#USER",
      gsi2sk: `${DUE}#USER#u`,
    });
  });

  it("reads a queued client or user as typed entries", () => {
    expect(deletionQueueEntryOf("CLIENT", { ...client, clientName: "Acme" })).toEqual(client);
    const { entity: _entity, ...untagged } = client;
    expect(deletionQueueEntryOf("CLIENT", untagged)).toEqual(client);
    const user = { ...keys.user("u"), userId: "u", ...deletionQueueKeys.entry("USER", DUE, keys.user("u")) };
    expect(deletionQueueEntryOf("USER", user)).toEqual({ ...user, entity: "user" });
  });

  it("refuses an entry without its id or of the other kind, naming the field", () => {
    const { clientId: _id, ...noId } = client;
    expect(() => deletionQueueEntryOf("CLIENT", noId)).toThrow(/clientId/);
    expect(() => deletionQueueEntryOf("USER", client)).toThrow(/entity/);
  });
});

describe("the deletion queue (access patterns)", () => {
  beforeAll(async () => {
    await provisionTable(homeRegion(), getConfig().tableName);
  });

  it("queues an existing item once (the first due time stays), and refuses a missing one", async () => {
    const clientId = randomUUID();
    const key = keys.client(clientId);
    await put({ ...key, entity: "client", clientId, clientName: "Acme" });
    expect(await queueForDeletion("CLIENT", key, "1972-01-01T00:00:00.000Z", "u1")).toBe(true);
    expect(await queueForDeletion("CLIENT", key, "1972-06-01T00:00:00.000Z", "u2")).toBe(true);
    expect(await storedItem(key)).toMatchObject({
      clientStatus: "pendingDeletion",
      clientDeletionScheduledAt: "1972-01-01T00:00:00.000Z",
      deletionRequestedBy: "u2",
      gsi2pk: "DELETION#CLIENT",
      gsi2sk: `1972-01-01T00:00:00.000Z#${key.pKey}`,
    });
    expect(await queueForDeletion("CLIENT", keys.client(randomUUID()), DUE, "u")).toBe(false);
    expect(await storedItem(keys.client("never-written"))).toBeUndefined();
  });

  it("lists what is due of one kind, oldest first; a broken entry comes apart, with why", async () => {
    const [early, late, future] = [randomUUID(), randomUUID(), randomUUID()];
    const ours = new Set<string>([early, late, future]);
    const queue = async (userId: string, due: string) => {
      await put({ ...keys.user(userId), entity: "user", userId, userEmail: `${userId}@x.test` });
      await queueForDeletion("USER", keys.user(userId), due, userId);
    };
    await queue(late, "1973-02-01T00:00:00.000Z");
    await queue(early, "1973-01-01T00:00:00.000Z");
    await queue(future, "2999-01-01T00:00:00.000Z");
    const broken = {
      ...keys.user("broken"),
      entity: "user",
      gsi2pk: "DELETION#USER",
      gsi2sk: "1973-01-15T00:00:00.000Z#x",
    };
    await put(broken);

    const { due, unreadable } = await listDueDeletions("USER", new Date("1973-06-01T00:00:00.000Z"));
    const mine = due.filter((entry) => entry.entity === "user" && ours.has(entry.userId));
    expect(mine.map((entry) => (entry.entity === "user" ? entry.userId : ""))).toEqual([early, late]);
    expect(mine[0]).toMatchObject({ deletionRequestedBy: early, gsi2pk: "DELETION#USER" });
    expect(unreadable).toContainEqual({ key: keys.user("broken"), problem: expect.stringMatching(/userId/) });
    // The client queue is another partition of the index.
    const clients = await listDueDeletions("CLIENT", new Date("1973-06-01T00:00:00.000Z"));
    expect(clients.due.some((entry) => entry.entity === "user")).toBe(false);
  });
});
