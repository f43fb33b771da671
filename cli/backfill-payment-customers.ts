/**
 * `backfill-payment-customers` (docs/billing.md "Backfill"): clients created before the GSI1 keys
 * `PAYMENTCUSTOMER#<customerId>` / `CLIENT#<clientId>` were written with the payment customer
 * (lib/db/entities/billing.ts `billingKeys`) lack them, and the Stripe webhook cannot find them by
 * the event's customer. This adds the keys to every client configuration that has a
 * `paymentCustomerId` and no `gsi1pk`.
 *
 * No index lists the client configurations (every other read of the project is a GetItem or a
 * Query on a key), so this one-off operator command reads the home table with a paged Scan and a
 * filter, on the low-level client (the project's document client has no Scan), outside every
 * request path and every Lambda's permissions. Each key is added with a conditional update (the
 * item still has that customer and still no `gsi1pk`), so it never overwrites a newer value and a
 * second run changes nothing.
 */
import { DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import { fixedEndpointSettings, sdkCallBounds } from "#lib/aws/clients.ts";
import { marshallItem, UpdateCommand, unmarshallItem } from "#lib/aws/document-client.ts";
import { billingKeys } from "#lib/db/entities/billing.ts";
import { clientConfigKeys } from "#lib/db/entities/client-config.ts";
import { homeDb, homeRegion, isConditionalCheckFailure, tableName } from "#lib/db/store.ts";

export interface BackfillReport {
  dryRun: boolean;
  /** Items the Scan read (before its filter), over every page. */
  scanned: number;
  /** Client configurations with a payment customer and no GSI1 key. */
  missing: number;
  /** Keys added (0 in a dry run). */
  updated: number;
  /** Changed meanwhile (keys added by someone else, customer changed, item deleted): left as they are. */
  skipped: number;
  /** The clients that lack the keys (a dry run) or got them. */
  clientIds: string[];
}

export async function backfillPaymentCustomers(
  options: { dryRun?: boolean; pageSize?: number } = {},
): Promise<BackfillReport> {
  const dryRun = options.dryRun === true;
  const low = new DynamoDBClient({ region: homeRegion(), ...sdkCallBounds(), ...fixedEndpointSettings() });
  const report: BackfillReport = { dryRun, scanned: 0, missing: 0, updated: 0, skipped: 0, clientIds: [] };
  try {
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await low.send(
        new ScanCommand({
          TableName: tableName(),
          FilterExpression:
            "sKey = :config AND begins_with(pKey, :client) AND attribute_exists(paymentCustomerId) AND attribute_type(paymentCustomerId, :string) AND attribute_not_exists(gsi1pk)",
          ExpressionAttributeValues: marshallItem({
            ":config": "CONFIG",
            ":client": "CLIENT#",
            ":string": "S",
          }),
          ProjectionExpression: "pKey, sKey, clientId, paymentCustomerId",
          ExclusiveStartKey: startKey ? marshallItem(startKey) : undefined,
          Limit: options.pageSize,
          ConsistentRead: true,
        }),
      );
      report.scanned += page.ScannedCount ?? 0;
      for (const raw of page.Items ?? []) {
        const item = unmarshallItem(raw);
        const clientId = typeof item.clientId === "string" ? item.clientId : String(item.pKey).slice(7);
        const customerId = item.paymentCustomerId;
        if (typeof customerId !== "string" || customerId === "") continue;
        report.missing += 1;
        if (dryRun) {
          report.clientIds.push(clientId);
          continue;
        }
        if (await addPaymentCustomerKeys(clientId, customerId)) {
          report.updated += 1;
          report.clientIds.push(clientId);
        } else report.skipped += 1;
      }
      startKey = page.LastEvaluatedKey ? unmarshallItem(page.LastEvaluatedKey) : undefined;
    } while (startKey);
  } finally {
    low.destroy();
  }
  return report;
}

/** Adds the keys unless the item changed since it was read; true when added. */
export async function addPaymentCustomerKeys(clientId: string, customerId: string): Promise<boolean> {
  const index = billingKeys.clientByPaymentCustomerIndex(customerId, clientId);
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: clientConfigKeys.item(clientId),
        UpdateExpression: "SET gsi1pk = :pk, gsi1sk = :sk",
        ConditionExpression:
          "attribute_exists(pKey) AND paymentCustomerId = :customer AND attribute_not_exists(gsi1pk)",
        ExpressionAttributeValues: { ":pk": index.gsi1pk, ":sk": index.gsi1sk, ":customer": customerId },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}
