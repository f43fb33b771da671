/**
 * `npm run admin -- backfill-payment-customers` (cli/backfill-payment-customers.ts, docs/billing.md
 * "Backfill") against this file's tables in the emulator: a client configuration written before the
 * GSI1 `PAYMENTCUSTOMER#` keys existed gets them, so the Stripe webhook finds the client by its
 * customer; a dry run changes nothing; a second run changes nothing; a newer value is never
 * overwritten.
 */
import { execFile } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { billingKeys } from "#lib/db/entities/billing.ts";
import { findClientIdByPaymentCustomer } from "#lib/db/entities/client-config.ts";
import { keys } from "#lib/db/keys.ts";
import { homeDb, tableName } from "#lib/db/store.ts";
import { handleStripeEvent } from "#lib/domain/billing-events.ts";
import { createClient } from "#lib/domain/clients.ts";
import { createUser } from "#lib/domain/users.ts";
import { provisionStack } from "#local/provision.ts";
import { addPaymentCustomerKeys, backfillPaymentCustomers } from "../../cli/backfill-payment-customers.ts";
import { storedItem } from "../support/stack.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
let counter = 0;

beforeAll(async () => {
  await provisionStack(getConfig());
});

/**
 * A client as it was stored before the index: its configuration has a payment customer and no
 * GSI1 keys (created now, then the keys removed and the customer set, as the old code wrote it).
 */
async function oldStyleClient(customerId: string | null): Promise<string> {
  counter += 1;
  const user = await createUser({
    email: `backfill-${Date.now()}-${counter}@backfill.test`,
    firstName: "Old",
    lastName: "Client",
  });
  const { clientId } = await createClient(String(user.userId), `Old Co ${counter}`);
  await homeDb().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.clientConfig(clientId),
      // With the subscription its plan follows, so that subscription's invoices apply.
      UpdateExpression:
        "SET paymentProvider = :provider, paymentCustomerId = :customer, planSubscriptionId = :subscription REMOVE gsi1pk, gsi1sk",
      ExpressionAttributeValues: {
        ":provider": customerId ? "stripe" : null,
        ":customer": customerId,
        ":subscription": customerId ? `sub_of_${customerId}` : null,
      },
    }),
  );
  return clientId;
}

/** What the Stripe webhook receives for a failed invoice of `customerId`. */
const failedInvoice = (customerId: string, id: string) => ({
  id,
  type: "invoice.payment_failed",
  created: Math.floor(Date.now() / 1000),
  data: {
    object: { id: `in_${id}`, object: "invoice", customer: customerId, subscription: `sub_of_${customerId}` },
  },
});

function admin(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "cli/admin.ts", ...args],
      { cwd: root, env: process.env, timeout: 60_000 },
      (error, stdout, stderr) =>
        done({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

describe("backfill-payment-customers", () => {
  it("adds the keys to old clients only, after which the webhook finds them; a dry run and a second run change nothing", async () => {
    const oldClient = await oldStyleClient("cus_backfill_old");
    const secondOld = await oldStyleClient("cus_backfill_old2");
    const noCustomer = await oldStyleClient(null);
    const before = await storedItem(keys.clientConfig(oldClient));
    expect(before).toMatchObject({ paymentCustomerId: "cus_backfill_old" });
    expect(before?.gsi1pk).toBeUndefined();

    // Before: the webhook cannot find the client, so the event is ignored.
    expect(await findClientIdByPaymentCustomer("cus_backfill_old")).toBeUndefined();
    expect(await handleStripeEvent(failedInvoice("cus_backfill_old", "evt_backfill_before"))).toMatchObject({
      outcome: "ignored",
      reason: "no client has this customer",
    });

    // A dry run (through the CLI, as operators run it, in pages of 2 items) lists and changes nothing.
    const dry = await admin(["backfill-payment-customers", "--dry-run", "--page-size", "2"]);
    expect(dry.code, dry.stderr).toBe(0);
    const dryReport = JSON.parse(dry.stdout);
    expect(dryReport).toMatchObject({ dryRun: true, missing: 2, updated: 0, skipped: 0 });
    expect(dryReport.clientIds.toSorted()).toEqual([oldClient, secondOld].toSorted());
    expect(dryReport.scanned).toBeGreaterThan(3);
    expect(await storedItem(keys.clientConfig(oldClient))).toEqual(before);

    const run = await backfillPaymentCustomers({ pageSize: 3 });
    expect(run).toMatchObject({ dryRun: false, missing: 2, updated: 2, skipped: 0 });
    expect(run.clientIds.toSorted()).toEqual([oldClient, secondOld].toSorted());
    const after = await storedItem(keys.clientConfig(oldClient));
    expect(after).toEqual({
      ...before,
      ...billingKeys.clientByPaymentCustomerIndex("cus_backfill_old", oldClient),
    });
    expect((await storedItem(keys.clientConfig(noCustomer)))?.gsi1pk).toBeUndefined();

    // The webhook's lookup now finds the client, and its event applies.
    expect(await findClientIdByPaymentCustomer("cus_backfill_old")).toBe(oldClient);
    expect(await findClientIdByPaymentCustomer("cus_backfill_old2")).toBe(secondOld);
    expect(await handleStripeEvent(failedInvoice("cus_backfill_old", "evt_backfill_after"))).toMatchObject({
      outcome: "applied",
      clientId: oldClient,
    });
    expect(await storedItem(keys.clientConfig(oldClient))).toMatchObject({ planStatus: "payment_failed" });

    // Twice: nothing left to do, nothing changes.
    const settled = await storedItem(keys.clientConfig(oldClient));
    const again = await backfillPaymentCustomers();
    expect(again).toMatchObject({ missing: 0, updated: 0, skipped: 0, clientIds: [] });
    expect(await storedItem(keys.clientConfig(oldClient))).toEqual(settled);
  });

  it("never overwrites a newer value: keys already there, or another customer since, are left alone", async () => {
    const clientId = await oldStyleClient("cus_backfill_current");
    // The customer read by a Scan that has since been replaced: the condition refuses.
    expect(await addPaymentCustomerKeys(clientId, "cus_backfill_stale")).toBe(false);
    expect((await storedItem(keys.clientConfig(clientId)))?.gsi1pk).toBeUndefined();
    // Keys written meanwhile (by a newer client creation path): kept as they are.
    const newer = billingKeys.clientByPaymentCustomerIndex("cus_backfill_current", clientId);
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.clientConfig(clientId),
        UpdateExpression: "SET gsi1pk = :pk, gsi1sk = :sk",
        ExpressionAttributeValues: { ":pk": newer.gsi1pk, ":sk": `${newer.gsi1sk}#newer` },
      }),
    );
    expect(await addPaymentCustomerKeys(clientId, "cus_backfill_current")).toBe(false);
    expect(await storedItem(keys.clientConfig(clientId))).toMatchObject({ gsi1sk: `${newer.gsi1sk}#newer` });
  });

  it("a bad page size is one line on stderr", async () => {
    const result = await admin(["backfill-payment-customers", "--page-size", "0"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/page-size.*whole number from 1 to 1000/);
  });
});
