/**
 * A managed client's budget as stored (docs/msp-api.md, "Usage, budget and top-ups"): the balance
 * `budget.current` on the client configuration (`CLIENT#<clientId>` / `CONFIG`, home table) and
 * one item per top-up (`CLIENT#<clientId>` / `TOPUP#<sequence>`), which is also the top-up's claim.
 *
 * Access patterns:
 * - "draw down budgets for a stream part": one TransactWriteItems in the home table: a marker
 *   (`STREAMBATCH#<part digest>` / `budget`, put only if absent) and, per client billed to its
 *   MSP, `budget.current = budget.current - amount` conditioned on the billing and the rate the
 *   amount was priced at. The same part delivered again finds its marker and draws nothing.
 * - "claim a top-up": a PutItem of `TOPUP#<n>` only if absent (n = the configuration's
 *   `topUpSequence`): of racing claimers exactly one wins.
 * - "top-up by sequence": a consistent GetItem.
 * - "settle a top-up": one TransactWriteItems: the claim from `pending` to `succeeded` (adding the
 *   amount to `budget.current`) or `failed`, and `topUpSequence` from n to n + 1.
 */
import { z } from "zod";
import { GetCommand, PutCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import {
  commitSteps,
  homeDb,
  isConditionalCheckFailure,
  nowSeconds,
  parseStored,
  type TransactionStep,
  tableName,
} from "#lib/db/store.ts";
import { BATCH_MARK_RETENTION_SECONDS } from "./telemetry.ts";

export const BUDGET_PROCESSOR = "budget";
export const TOP_UP_METHODS_OF_CLAIM = ["automatic", "manual"] as const;
export const TOP_UP_STATUSES = ["pending", "succeeded", "failed"] as const;

export const TopUpItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("topUp"),
  clientId: z.string(),
  mspId: z.string(),
  sequence: z.number().int().min(0),
  method: z.enum(TOP_UP_METHODS_OF_CLAIM),
  /** The charge, in cents of CURRENCY (lib/domain/msp-pricing.ts). */
  amountCents: z.number().int().positive(),
  currency: z.string(),
  status: z.enum(TOP_UP_STATUSES),
  /** The key the charge was sent with: one charge per claim, whoever sends it and how often. */
  idempotencyKey: z.string(),
  paymentIntentId: z.string().nullable(),
  failureReason: z.string().nullable(),
  createdBy: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type TopUpItem = z.infer<typeof TopUpItem>;

export const topUpItemOf = (item: Record<string, unknown>): TopUpItem =>
  parseStored(TopUpItem, "top-up", item);

export const budgetKeys = {
  config: keys.clientConfig,
  topUp: keys.clientTopUp,
  mark: (digest: string) => keys.streamBatchMark(digest, BUDGET_PROCESSOR),
} as const;

// ---- draw-down ----

/** One client's draw-down in a part: the amount (dollars, exact to 9 places) and the rate it was priced at. */
export interface BudgetDraw {
  clientId: string;
  amount: number;
  rate: number;
}

export type DrawDownResult =
  | { outcome: "applied" }
  | { outcome: "alreadyApplied" }
  /** A client's billing or rate changed since it was read: re-read and price again. */
  | { outcome: "stale"; clientIds: string[] };

const drawStepName = (clientId: string) => `draw ${clientId}`;

/** Access pattern "draw down budgets for a stream part" (see the module comment). */
export async function drawDownBudgets(digest: string, draws: readonly BudgetDraw[]): Promise<DrawDownResult> {
  if (draws.length === 0) return { outcome: "applied" };
  const steps: TransactionStep[] = [
    {
      name: "mark",
      action: {
        Put: {
          TableName: tableName(),
          Item: {
            ...budgetKeys.mark(digest),
            entity: "streamBatchMark",
            clients: draws.length,
            TTL: nowSeconds() + BATCH_MARK_RETENTION_SECONDS,
          },
          ConditionExpression: "attribute_not_exists(pKey)",
        },
      },
    },
    ...draws.map(
      (draw): TransactionStep => ({
        name: drawStepName(draw.clientId),
        action: {
          Update: {
            TableName: tableName(),
            Key: budgetKeys.config(draw.clientId),
            // Adding the negated amount: DynamoDB adds decimals exactly (moto's emulator subtracts in
            // binary floating point, its `+` is exact: this form is exact on both).
            UpdateExpression: "SET budget.#current = budget.#current + :delta",
            ConditionExpression: "billingTo = :msp AND rates.apiSeconds = :rate",
            // CURRENT is a DynamoDB reserved word
            ExpressionAttributeNames: { "#current": "current" },
            ExpressionAttributeValues: { ":delta": -draw.amount, ":msp": "msp", ":rate": draw.rate },
          },
        },
      }),
    ),
  ];
  const refused = await commitSteps<DrawDownResult>(steps, {
    attempts: 5,
    cancelled: ({ failed }) => {
      if (failed.includes("mark")) return { outcome: "alreadyApplied" };
      const stale = draws.filter((draw) => failed.includes(drawStepName(draw.clientId)));
      return stale.length ? { outcome: "stale", clientIds: stale.map((draw) => draw.clientId) } : undefined;
    },
  });
  return refused ?? { outcome: "applied" };
}

// ---- top-ups ----

/** Access pattern "top-up by sequence": a consistent GetItem. */
export async function findTopUp(clientId: string, sequence: number): Promise<TopUpItem | undefined> {
  const result = await homeDb().send(
    new GetCommand({
      TableName: tableName(),
      Key: budgetKeys.topUp(clientId, sequence),
      ConsistentRead: true,
    }),
  );
  return result.Item ? topUpItemOf(result.Item) : undefined;
}

/**
 * Access pattern "claim a top-up": the pending top-up put only if its sequence number is free.
 * Answers the claim, or the item that holds the number already (another claimer won).
 */
export async function claimTopUp(
  claim: TopUpItem,
): Promise<{ claimed: true; topUp: TopUpItem } | { claimed: false; existing: TopUpItem | undefined }> {
  try {
    await homeDb().send(
      new PutCommand({
        TableName: tableName(),
        Item: claim,
        ConditionExpression: "attribute_not_exists(pKey)",
      }),
    );
    return { claimed: true, topUp: claim };
  } catch (error) {
    if (!isConditionalCheckFailure(error)) throw error;
    return { claimed: false, existing: await findTopUp(claim.clientId, claim.sequence) };
  }
}

/** The steps that settle claim `n`: the claim leaves `pending`, the sequence moves from n to n + 1. */
function settleSteps(
  topUp: TopUpItem,
  claimSet: string,
  claimValues: Record<string, unknown>,
  configSet: string,
  configValues: Record<string, unknown>,
): TransactionStep[] {
  return [
    {
      name: "claim",
      action: {
        Update: {
          TableName: tableName(),
          Key: budgetKeys.topUp(topUp.clientId, topUp.sequence),
          UpdateExpression: `SET #status = :status, ${claimSet}`,
          ConditionExpression: "#status = :pending",
          ExpressionAttributeNames: { "#status": "status" },
          ExpressionAttributeValues: { ...claimValues, ":pending": "pending" },
        },
      },
    },
    {
      name: "sequence",
      action: {
        Update: {
          TableName: tableName(),
          Key: budgetKeys.config(topUp.clientId),
          UpdateExpression: `SET topUpSequence = :next${configSet ? `, ${configSet}` : ""}`,
          ConditionExpression:
            topUp.sequence === 0
              ? "attribute_not_exists(topUpSequence) OR topUpSequence = :sequence"
              : "topUpSequence = :sequence",
          ExpressionAttributeValues: {
            ...configValues,
            ":next": topUp.sequence + 1,
            ":sequence": topUp.sequence,
          },
          ...(configSet.includes("#current") ? { ExpressionAttributeNames: { "#current": "current" } } : {}),
        },
      },
    },
  ];
}

/** True when settled now; false when another settler got there first (nothing written). */
async function settle(steps: TransactionStep[]): Promise<boolean> {
  const lost = await commitSteps(steps, {
    cancelled: ({ failed }) => (failed.length > 0 ? ("settled already" as const) : undefined),
  });
  return lost === undefined;
}

/** Access pattern "settle a top-up", charged: the claim `succeeded` and the amount added to the balance. */
export async function completeTopUp(
  topUp: TopUpItem,
  paymentIntentId: string,
  now: string,
): Promise<boolean> {
  return settle(
    settleSteps(
      topUp,
      "paymentIntentId = :intent, updatedAt = :now",
      { ":status": "succeeded", ":intent": paymentIntentId, ":now": now },
      "budget.#current = budget.#current + :amount, automaticTopUpFailedAt = :cleared",
      { ":amount": topUp.amountCents / 100, ":cleared": null },
    ),
  );
}

/** Access pattern "settle a top-up", refused: the claim `failed`; an automatic one pauses automatic top-ups. */
export async function failTopUp(
  topUp: TopUpItem,
  reason: string,
  paymentIntentId: string | null,
  now: string,
): Promise<boolean> {
  return settle(
    settleSteps(
      topUp,
      "failureReason = :reason, paymentIntentId = :intent, updatedAt = :now",
      { ":status": "failed", ":reason": reason, ":intent": paymentIntentId, ":now": now },
      topUp.method === "automatic" ? "automaticTopUpFailedAt = :now" : "",
      topUp.method === "automatic" ? { ":now": now } : {},
    ),
  );
}
