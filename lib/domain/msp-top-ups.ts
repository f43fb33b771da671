/**
 * Top-ups of a managed client's budget (docs/msp-api.md, "Usage, budget and top-ups"), charged to
 * the MSP's payment method through the payment processor. Each top-up is a claim
 * (`CLIENT#<clientId>` / `TOPUP#<n>`, n = the configuration's `topUpSequence`) put only if absent,
 * so of any number of racing triggers exactly one charges; the charge's idempotency key is
 * `msp-top-up-<clientId>-<n>`, so a retried or resumed charge is the same charge. Settling the
 * claim (adding the amount, or recording the refusal) advances the sequence in the same
 * transaction.
 */
import {
  claimTopUp,
  completeTopUp,
  failTopUp,
  findTopUp,
  type TopUpItem,
  topUpItemOf,
} from "#lib/db/entities/budget.ts";
import { type ClientConfigItem, findClientConfig } from "#lib/db/entities/client-config.ts";
import { findMspWithConfig } from "#lib/db/entities/msp.ts";
import { keys } from "#lib/db/keys.ts";
import { nowIso } from "#lib/db/store.ts";
import { describeError, log } from "#lib/log.ts";
import { conflict, notFound, paymentFailed, validationFailed } from "#lib/shared/errors.ts";
import type { MspAccess } from "./access.ts";
import { CLIENT_NOT_FOUND } from "./clients.ts";
import {
  automaticTopUpCents,
  automaticTopUpDue,
  CURRENCY,
  manualTopUpProblem,
  thresholdsApply,
} from "./msp-pricing.ts";
import { MSP_NOT_FOUND } from "./msps.ts";
import { chargeCustomer } from "./payments.ts";

/** A pending claim older than this is taken as abandoned (its charger crashed) and resumed. */
export const STALE_CLAIM_MS = 120_000;
export const NOT_BILLED_TO_MSP = "Top-ups apply only to clients billed to the MSP by Stripe";
export const TOP_UP_IN_PROGRESS = "Another top-up of this client is in progress; try again";

export const topUpIdempotencyKey = (clientId: string, sequence: number) =>
  `msp-top-up-${clientId}-${sequence}`;

function newClaim(
  config: ClientConfigItem,
  mspId: string,
  method: TopUpItem["method"],
  amountCents: number,
  createdBy: string | null,
): TopUpItem {
  const now = nowIso();
  return topUpItemOf({
    ...keys.clientTopUp(config.clientId, config.topUpSequence),
    entity: "topUp",
    clientId: config.clientId,
    mspId,
    sequence: config.topUpSequence,
    method,
    amountCents,
    currency: CURRENCY,
    status: "pending",
    idempotencyKey: topUpIdempotencyKey(config.clientId, config.topUpSequence),
    paymentIntentId: null,
    failureReason: null,
    createdBy,
    createdAt: now,
    updatedAt: now,
  });
}

/** Charges a claim's amount to the MSP's customer and settles the claim either way. */
async function chargeClaim(topUp: TopUpItem, customerId: string | null) {
  const charge = await chargeCustomer({
    customerId,
    amountCents: topUp.amountCents,
    currency: topUp.currency,
    idempotencyKey: topUp.idempotencyKey,
    description: `Budget top-up of managed client ${topUp.clientId}`,
    metadata: { clientId: topUp.clientId, mspId: topUp.mspId, topUpSequence: String(topUp.sequence) },
  });
  if (charge.outcome === "succeeded") await completeTopUp(topUp, charge.paymentIntentId, nowIso());
  else await failTopUp(topUp, charge.reason, charge.paymentIntentId, nowIso());
  return charge;
}

/** A pending claim whose charger has not settled it within STALE_CLAIM_MS: taken as crashed. */
const abandoned = (claim: TopUpItem | undefined): claim is TopUpItem =>
  claim?.status === "pending" && Date.now() - Date.parse(claim.createdAt) > STALE_CLAIM_MS;

export type AutomaticTopUpOutcome = "notDue" | "claimedElsewhere" | "succeeded" | "declined";

/**
 * The automatic top-up check of one client, after its budget was drawn down: when due
 * (msp-pricing.ts `automaticTopUpDue`), claims the next top-up and charges what brings `current`
 * up to the maximum. Safe to call any number of times, concurrently: one claim, one charge. A
 * pending claim left by a crashed charger is resumed (same idempotency key) after STALE_CLAIM_MS.
 */
export async function runAutomaticTopUp(clientId: string): Promise<AutomaticTopUpOutcome> {
  const config = await findClientConfig(clientId);
  if (!config?.mspId || !automaticTopUpDue(config, Date.now())) return "notDue";
  const found = await findMspWithConfig(config.mspId);
  let topUp: TopUpItem | undefined;
  const claim = await claimTopUp(
    newClaim(config, config.mspId, "automatic", automaticTopUpCents(config.budget), null),
  );
  if (claim.claimed) topUp = claim.topUp;
  else if (abandoned(claim.existing)) topUp = claim.existing;
  if (!topUp) return "claimedElsewhere";
  const charge = await chargeClaim(topUp, found?.config?.paymentCustomerId ?? null);
  if (charge.outcome === "declined")
    log.warn("Automatic top-up refused by the payment processor", { clientId, reason: charge.reason });
  return charge.outcome;
}

/** The automatic check for each client drawn down; a failure is logged (the next draw-down checks again). */
export async function runAutomaticTopUps(clientIds: readonly string[]): Promise<void> {
  await Promise.all(
    clientIds.map(async (clientId) => {
      try {
        await runAutomaticTopUp(clientId);
      } catch (error) {
        log.error("Automatic top-up not completed", { clientId, ...describeError(error) });
      }
    }),
  );
}

export interface TopUpAnswer {
  topUpId: number;
  method: TopUpItem["method"];
  amount: number;
  currency: string;
  status: TopUpItem["status"];
  paymentIntentId: string | null;
  createdAt: string;
  budget: ClientConfigItem["budget"];
}

/**
 * POST /api/msps/{mspId}/clients/{clientId}/top-ups {amount}: charges `amount` (dollars, whole
 * cents, at least 0.50, never raising `current` above the maximum: 400 naming `amount`) to the
 * MSP's payment method and adds it to the budget. 409 when the client is not billed to the MSP by
 * Stripe or another top-up holds the claim; a refused charge is 402 (`Payment failed: <reason>`);
 * an unreachable processor 502.
 */
export async function manualTopUp(access: MspAccess, amount: number): Promise<TopUpAnswer> {
  const clientId = access.clientId as string;
  const [config, found] = await Promise.all([findClientConfig(clientId), findMspWithConfig(access.mspId)]);
  if (!config || config.mspId !== access.mspId) throw notFound(CLIENT_NOT_FOUND);
  if (!found?.config) throw notFound(MSP_NOT_FOUND);
  if (!thresholdsApply(config.billingTo, config.billingType)) throw conflict(NOT_BILLED_TO_MSP);
  const problem = manualTopUpProblem(amount, config.budget);
  if (problem) throw validationFailed([{ field: "amount", problem }]);
  const claim = await claimTopUp(
    newClaim(config, access.mspId, "manual", Math.round(amount * 100), access.userId),
  );
  if (!claim.claimed) {
    // A claim a crashed charger left: settle it (same key, so no second charge), then the caller retries.
    if (abandoned(claim.existing)) await chargeClaim(claim.existing, found.config.paymentCustomerId);
    throw conflict(TOP_UP_IN_PROGRESS);
  }
  const charge = await chargeClaim(claim.topUp, found.config.paymentCustomerId);
  if (charge.outcome === "declined") throw paymentFailed(`Payment failed: ${charge.reason}`);
  const [settled, after] = await Promise.all([
    findTopUp(clientId, claim.topUp.sequence),
    findClientConfig(clientId),
  ]);
  const topUp = settled ?? claim.topUp;
  return {
    topUpId: topUp.sequence,
    method: topUp.method,
    amount: topUp.amountCents / 100,
    currency: topUp.currency,
    status: topUp.status,
    paymentIntentId: topUp.paymentIntentId,
    createdAt: topUp.createdAt,
    budget: (after ?? config).budget,
  };
}
