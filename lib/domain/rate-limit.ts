/**
 * Fixed-window request counting, exact under concurrency: one conditional atomic ADD per request
 * on the window's counter item, so DynamoDB serialises racing requests and the (limit+1)th fails
 * its condition. The window counter expires through TTL shortly after its window ends.
 */

import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { now as clockNow } from "#lib/clock.ts";
import { getConfig } from "#lib/config.ts";
import { keys } from "#lib/db/keys.ts";
import { isConditionalCheckFailure } from "#lib/db/store.ts";
import {
  fixedWindowAt,
  MINUTE_MS,
  retryAfterSeconds,
  type TimeWindow,
  windowAt,
} from "#lib/shared/meter-windows.ts";

export const RATE_WINDOW_MS = MINUTE_MS;

export type RateWindow = TimeWindow;

/** The rate window holding `nowMs`: the UTC minute (windows.ts), or another fixed length. */
export function rateWindowAt(nowMs: number, windowMs = RATE_WINDOW_MS): RateWindow {
  if (windowMs === RATE_WINDOW_MS) {
    const { start, end } = windowAt("minute", nowMs);
    return { start, end };
  }
  return fixedWindowAt(nowMs, windowMs);
}

export { retryAfterSeconds };

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  retryAfterSeconds: number;
}

export async function consumeRequest(
  principal: string,
  limitPerMinute: number,
  options: { region?: string; nowMs?: number; windowMs?: number } = {},
): Promise<RateDecision> {
  const config = getConfig();
  const now = options.nowMs ?? clockNow();
  const window = rateWindowAt(now, options.windowMs);
  try {
    const result = await dynamo(options.region ?? config.homeRegion).send(
      new UpdateCommand({
        TableName: config.tableName,
        Key: keys.rateWindow(principal, window.start),
        UpdateExpression: "ADD requestCount :one SET #ttl = if_not_exists(#ttl, :ttl)",
        ConditionExpression: "attribute_not_exists(requestCount) OR requestCount < :limit",
        ExpressionAttributeNames: { "#ttl": "TTL" },
        ExpressionAttributeValues: {
          ":one": 1,
          ":limit": limitPerMinute,
          ":ttl": Math.ceil(window.end / 1000) + 60,
        },
        ReturnValues: "UPDATED_NEW",
      }),
    );
    const used = Number(result.Attributes?.requestCount ?? 1);
    return {
      allowed: true,
      limit: limitPerMinute,
      remaining: Math.max(0, limitPerMinute - used),
      retryAfterSeconds: 0,
    };
  } catch (error) {
    if (!isConditionalCheckFailure(error)) throw error;
    return {
      allowed: false,
      limit: limitPerMinute,
      remaining: 0,
      retryAfterSeconds: retryAfterSeconds(now, window),
    };
  }
}
