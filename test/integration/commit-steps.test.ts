/**
 * commitSteps (lib/db/store.ts), the one TransactWriteItems of named steps, against the emulator:
 * a cancellation is read by step name into the caller's error or outcome, an unread one is
 * rethrown, a ClientRequestToken makes a repeated commit idempotent, and writeSteps keeps its
 * answers on top of it.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { GetCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { writeSteps } from "#lib/db/commit.ts";
import { commitSteps, homeDb, homeRegion, type TransactionStep, tableName } from "#lib/db/store.ts";
import { provisionTable } from "#local/provision.ts";

const key = () => ({ pKey: `TEST#${randomUUID()}`, sKey: "COMMIT" });
const putNew = (name: string, item: Record<string, unknown>): TransactionStep => ({
  name,
  action: { Put: { TableName: tableName(), Item: item, ConditionExpression: "attribute_not_exists(pKey)" } },
});
const add = (name: string, itemKey: { pKey: string; sKey: string }): TransactionStep => ({
  name,
  action: {
    Update: {
      TableName: tableName(),
      Key: itemKey,
      UpdateExpression: "ADD hits :one",
      ExpressionAttributeValues: { ":one": 1 },
    },
  },
});
const read = async (itemKey: { pKey: string; sKey: string }) =>
  (await homeDb().send(new GetCommand({ TableName: tableName(), Key: itemKey, ConsistentRead: true }))).Item;

describe("commitSteps", () => {
  beforeAll(async () => {
    await provisionTable(homeRegion(), getConfig().tableName);
  });

  it("writes every step and answers undefined", async () => {
    const [a, b] = [key(), key()];
    expect(await commitSteps([putNew("a", { ...a, n: 1 }), putNew("b", { ...b, n: 2 })])).toBeUndefined();
    expect(await read(a)).toMatchObject({ n: 1 });
    expect(await read(b)).toMatchObject({ n: 2 });
  });

  it("reads a failed condition by step name: an Error is thrown, another value answered, nothing written", async () => {
    const [taken, fresh] = [key(), key()];
    await commitSteps([putNew("taken", taken)]);
    const steps = [putNew("fresh", { ...fresh, n: 1 }), putNew("taken", taken)];
    const refused = new Error("taken already");
    await expect(
      commitSteps(steps, { cancelled: ({ failed }) => (failed.includes("taken") ? refused : undefined) }),
    ).rejects.toBe(refused);
    expect(await commitSteps(steps, { cancelled: ({ failed }) => ({ outcome: "refused", failed }) })).toEqual(
      { outcome: "refused", failed: ["taken"] },
    );
    expect(await read(fresh)).toBeUndefined();
  });

  it("rethrows a cancellation the caller does not read (no conflict to retry)", async () => {
    const taken = key();
    await commitSteps([putNew("taken", taken)]);
    await expect(commitSteps([putNew("taken", taken)], { attempts: 3 })).rejects.toMatchObject({
      name: "TransactionCanceledException",
    });
    await expect(
      commitSteps([putNew("taken", taken)], { cancelled: () => undefined, attempts: 3 }),
    ).rejects.toMatchObject({ name: "TransactionCanceledException" });
  });

  it("applies a commit repeated with the same ClientRequestToken once", async () => {
    const counter = key();
    const token = randomUUID();
    await commitSteps([add("count", counter)], { token });
    await commitSteps([add("count", counter)], { token });
    expect(await read(counter)).toMatchObject({ hits: 1 });
    await commitSteps([add("count", counter)]);
    expect(await read(counter)).toMatchObject({ hits: 2 });
  });

  it("keeps writeSteps' answers: true when written, the refusal's error thrown", async () => {
    const taken = key();
    expect(await writeSteps(homeRegion(), [putNew("taken", taken)], () => undefined)).toBe(true);
    const refused = new Error("exists");
    await expect(
      writeSteps(homeRegion(), [putNew("taken", taken)], (failed) =>
        failed.includes("taken") ? refused : undefined,
      ),
    ).rejects.toBe(refused);
    await expect(writeSteps(homeRegion(), [putNew("taken", taken)], () => undefined)).rejects.toMatchObject({
      name: "TransactionCanceledException",
    });
  });
});
