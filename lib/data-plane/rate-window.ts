/**
 * The data plane's rate limit (spec 8) and configuration freshness in one round trip: a
 * TransactWriteItems that adds the request to the proxy credential's fixed one-minute window
 * (conditional, so exact under concurrency) and checks that the client's `configVersion` is still
 * the one the request was admitted with. Either failing cancels both: no count is kept for a
 * request decided on stale configuration.
 */

import { dynamo } from "../aws/clients.ts";
import { TransactWriteCommand } from "../db/document-client.ts";
import { keys } from "../db/keys.ts";
import { tableName, transactionCancellationCodes } from "../db/store.ts";
import { type RateDecision, rateWindowAt, retryAfterSeconds } from "../domain/rate-limit.ts";
import type { ProxyRuntime } from "./runtime-config.ts";

export async function consumeRateWindow(
  region: string,
  runtime: Pick<ProxyRuntime, "clientId" | "version">,
  credentialId: string,
  limitPerMinute: number,
  nowMs = Date.now(),
): Promise<RateDecision | "stale"> {
  const window = rateWindowAt(nowMs);
  try {
    await dynamo(region).send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: tableName(),
              Key: keys.rateWindow(`CRED#${credentialId}`, window.start),
              UpdateExpression: "ADD requestCount :one SET #ttl = if_not_exists(#ttl, :ttl)",
              ConditionExpression: "attribute_not_exists(requestCount) OR requestCount < :limit",
              ExpressionAttributeNames: { "#ttl": "TTL" },
              ExpressionAttributeValues: {
                ":one": 1,
                ":limit": limitPerMinute,
                ":ttl": Math.ceil(window.end / 1000) + 60,
              },
            },
          },
          {
            ConditionCheck: {
              TableName: tableName(),
              Key: keys.clientRuntime(runtime.clientId),
              ConditionExpression:
                runtime.version === 0
                  ? "attribute_not_exists(configVersion) OR configVersion = :version"
                  : "configVersion = :version",
              ExpressionAttributeValues: { ":version": runtime.version },
            },
          },
        ],
      }),
    );
    return { allowed: true, limit: limitPerMinute, remaining: -1, retryAfterSeconds: 0 };
  } catch (error) {
    const codes = transactionCancellationCodes(error);
    if (!codes) throw error;
    if (codes[1] === "ConditionalCheckFailed") return "stale";
    if (codes[0] === "ConditionalCheckFailed")
      return {
        allowed: false,
        limit: limitPerMinute,
        remaining: 0,
        retryAfterSeconds: retryAfterSeconds(nowMs, window),
      };
    throw error;
  }
}
