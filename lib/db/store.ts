/**
 * Thin helpers over the DynamoDB document client: bounded queries, batched reads and deletes with
 * retry of unprocessed items, and recognition of conditional failures. Every read here is a
 * GetItem/BatchGetItem or a Query on a key or index; there is no Scan.
 */

import * as z from "zod/mini";
import { dynamo } from "#lib/aws/clients.ts";
import {
  BatchGetCommand,
  BatchWriteCommand,
  type NativeAttributeValue,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import type { Key } from "./keys.ts";

export type Item = Record<string, NativeAttributeValue>;

/** Upper bound of items any list read gathers before paginating in memory (every list is bounded). */
export const MAX_LIST_ITEMS = 1000;

/**
 * A stored item read through its entity's schema (zod/mini or classic zod: any zod 4 schema). An
 * item that does not match is a defect of the store, not of the caller: the error names the item
 * and the first fields that fail.
 */
export function parseStored<T extends z.core.$ZodType>(
  schema: T,
  what: string,
  item: Record<string, unknown>,
): z.output<T> {
  const parsed = z.safeParse(schema, item);
  if (!parsed.success)
    throw new Error(
      `Stored ${what} ${String(item.pKey)}/${String(item.sKey)} does not match its schema: ${parsed.error.issues
        .slice(0, 3)
        .map((issue) => `${issue.path.join(".")}: ${issue.message}`)
        .join("; ")}`,
    );
  return parsed.data;
}

/** The physical key of any stored item (lists of keys to delete, keys-only projections). */
export const ItemKey = z.object({ pKey: z.string(), sKey: z.string() });

/** The key of a stored item, and nothing else of it. */
export const keyOf = (item: Record<string, unknown>): Key => parseStored(ItemKey, "item key", item);

export const homeRegion = () => getConfig().homeRegion;
export const tableName = () => getConfig().tableName;
export const homeDb = () => dynamo(homeRegion());

export function isConditionalCheckFailure(error: unknown): boolean {
  return error instanceof Error && error.name === "ConditionalCheckFailedException";
}

/** Cancellation reason codes of a failed TransactWriteItems, one per action ("None" when that one was fine). */
export function transactionCancellationCodes(error: unknown): string[] | undefined {
  if (!(error instanceof Error) || error.name !== "TransactionCanceledException") return undefined;
  const reasons = (error as Error & { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
  if (reasons) return reasons.map((reason) => reason.Code ?? "None");
  // Some emulators only put the reasons in the message: "... [None, ConditionalCheckFailed]".
  const match = /\[([^\]]*)\]/.exec(error.message);
  return match?.[1]?.split(",").map((code) => code.trim() || "None");
}

/** Run a Query to completion (following LastEvaluatedKey), stopping at `max` items. */
export async function queryAll(
  input: Omit<QueryCommandInput, "TableName" | "ExclusiveStartKey">,
  options: { region?: string; max?: number } = {},
): Promise<Item[]> {
  const max = options.max ?? MAX_LIST_ITEMS;
  const db = dynamo(options.region ?? homeRegion());
  const items: Item[] = [];
  let startKey: Record<string, NativeAttributeValue> | undefined;
  do {
    const page = await db.send(
      new QueryCommand({
        ...input,
        TableName: tableName(),
        ExclusiveStartKey: startKey,
        Limit: Math.min(max - items.length, input.Limit ?? 1000),
      }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey && items.length < max);
  return items;
}

/** All items of one partition (optionally under a sort-key prefix), bounded by `max`. */
export function queryPartition(
  pKey: string,
  options: {
    region?: string;
    sKeyPrefix?: string;
    max?: number;
    newestFirst?: boolean;
    consistent?: boolean;
  } = {},
): Promise<Item[]> {
  const values: Record<string, string> = { ":pk": pKey };
  let condition = "pKey = :pk";
  if (options.sKeyPrefix) {
    condition += " AND begins_with(sKey, :prefix)";
    values[":prefix"] = options.sKeyPrefix;
  }
  return queryAll(
    {
      KeyConditionExpression: condition,
      ExpressionAttributeValues: values,
      ScanIndexForward: !options.newestFirst,
      ConsistentRead: options.consistent ?? true,
    },
    options,
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** BatchGetItem in chunks of 100, retrying unprocessed keys with backoff. Order is not preserved. */
export async function batchGet(itemKeys: Key[], options: { region?: string } = {}): Promise<Item[]> {
  const db = dynamo(options.region ?? homeRegion());
  const table = tableName();
  const results: Item[] = [];
  for (let offset = 0; offset < itemKeys.length; offset += 100) {
    let pending: Record<string, NativeAttributeValue>[] = itemKeys.slice(offset, offset + 100);
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await sleep(Math.min(1000, 25 * 2 ** attempt));
      if (attempt > 8) throw new Error("BatchGetItem kept returning unprocessed keys");
      const out = await db.send(
        new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } }),
      );
      results.push(...(out.Responses?.[table] ?? []));
      pending = out.UnprocessedKeys?.[table]?.Keys ?? [];
    }
  }
  return results;
}

/** BatchWriteItem deletes in chunks of 25, retrying unprocessed items. Idempotent. */
export async function batchDelete(itemKeys: Key[], options: { region?: string } = {}): Promise<void> {
  const db = dynamo(options.region ?? homeRegion());
  const table = tableName();
  for (let offset = 0; offset < itemKeys.length; offset += 25) {
    let pending = itemKeys.slice(offset, offset + 25).map((k) => ({ DeleteRequest: { Key: { ...k } } }));
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await sleep(Math.min(1000, 25 * 2 ** attempt));
      if (attempt > 8) throw new Error("BatchWriteItem kept returning unprocessed items");
      const out = await db.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
      pending = (out.UnprocessedItems?.[table] ?? []) as typeof pending;
    }
  }
}

/** Delete every item of a partition, page by page (each page re-queried, so it is resumable). */
export async function deletePartition(pKey: string, options: { region?: string } = {}): Promise<number> {
  let deleted = 0;
  for (;;) {
    const page = await queryAll(
      {
        KeyConditionExpression: "pKey = :pk",
        ExpressionAttributeValues: { ":pk": pKey },
        ProjectionExpression: "pKey, sKey",
      },
      { region: options.region, max: 500 },
    );
    if (page.length === 0) return deleted;
    await batchDelete(page.map(keyOf), options);
    deleted += page.length;
  }
}

export const nowIso = () => new Date().toISOString();
export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** TTL-bound items outlive their expiry until DynamoDB deletes them (up to days): filter on read. */
export function isExpired(item: Item, nowSec = nowSeconds()): boolean {
  return typeof item.TTL === "number" && item.TTL <= nowSec;
}

/** Strip physical keys and internal attributes before an item leaves the service. */
export function withoutInternals(item: Item, extra: readonly string[] = []): Item {
  const hidden = new Set(["pKey", "sKey", "gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk", "entity", ...extra]);
  return Object.fromEntries(Object.entries(item).filter(([k]) => !hidden.has(k)));
}

/**
 * `SET` clauses for the defined entries of `fields` (placeholders #f0/:v0...), plus `extraSets`
 * (which may use their own `:name` values, given in `extraValues`).
 */
export function setExpression(
  fields: Record<string, unknown>,
  extraSets: string[] = [],
  extraValues: Record<string, unknown> = {},
) {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ...extraValues };
  const sets = [...extraSets];
  Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .forEach(([field, value], index) => {
      names[`#f${index}`] = field;
      values[`:v${index}`] = value;
      sets.push(`#f${index} = :v${index}`);
    });
  return {
    UpdateExpression: `SET ${sets.join(", ")}`,
    ExpressionAttributeNames: Object.keys(names).length ? names : undefined,
    ExpressionAttributeValues: values,
  };
}

/** One action of a TransactWriteItems, named for what it does, so a cancellation is read by name. */
export interface TransactionStep {
  name: string;
  action: NonNullable<TransactWriteCommandInput["TransactItems"]>[number];
}

/**
 * What cancelled a transaction of named steps: the names whose condition did not hold, and
 * whether DynamoDB reported a conflict with another transaction. Undefined when the error is not
 * a cancellation (it is then rethrown as it is).
 */
export function cancelledSteps(
  error: unknown,
  steps: readonly TransactionStep[],
): { failed: string[]; conflict: boolean } | undefined {
  const codes = transactionCancellationCodes(error);
  if (!codes) return undefined;
  return {
    failed: steps.filter((_, index) => codes[index] === "ConditionalCheckFailed").map((step) => step.name),
    conflict: codes.includes("TransactionConflict"),
  };
}

/** The TransactItems of named steps, in order. */
export const transactItemsOf = (steps: readonly TransactionStep[]) => steps.map((step) => step.action);

/** What cancelled a transaction of named steps (see cancelledSteps). */
export type Cancellation = { failed: string[]; conflict: boolean };

/** How commitSteps writes: where, how often a conflict is retried, and what a cancellation means. */
export interface CommitOptions<T> {
  /** Default: the home region. */
  region?: string;
  /** ClientRequestToken of the transaction (an idempotent retry). */
  token?: string;
  /**
   * Reads a cancellation by step name: an Error is thrown, any other value is the caller's outcome
   * (returned), undefined retries a conflict (while attempts remain) and rethrows anything else.
   */
  cancelled?: (cancellation: Cancellation) => Error | T | undefined;
  /** Attempts in all while transactions conflict (default 1: a conflict is rethrown). */
  attempts?: number;
  /** Milliseconds to wait after failed attempt `attempt` before the next (default 25 * 2^attempt). */
  backoff?: (attempt: number) => number;
}

/**
 * The one TransactWriteItems of named steps: undefined when written, the outcome `cancelled` chose
 * when a cancellation means something to the caller (its Error is thrown). A conflict the caller
 * did not read is retried `attempts` times with backoff, then rethrown, as is any other error.
 */
export async function commitSteps<T = never>(
  steps: readonly TransactionStep[],
  options: CommitOptions<T> = {},
): Promise<T | undefined> {
  const db = dynamo(options.region ?? homeRegion());
  const attempts = options.attempts ?? 1;
  for (let attempt = 1; ; attempt++) {
    try {
      await db.send(
        new TransactWriteCommand({
          TransactItems: transactItemsOf(steps),
          ...(options.token ? { ClientRequestToken: options.token } : {}),
        }),
      );
      return undefined;
    } catch (error) {
      const cancelled = cancelledSteps(error, steps);
      if (!cancelled) throw error;
      const outcome = options.cancelled?.(cancelled);
      if (outcome instanceof Error) throw outcome;
      if (outcome !== undefined) return outcome;
      if (!cancelled.conflict || attempt >= attempts) throw error;
      await sleep(options.backoff?.(attempt) ?? 25 * 2 ** attempt);
    }
  }
}
