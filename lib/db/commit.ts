/**
 * Transactions of named steps, and the one commit path of a client's regional configuration.
 *
 * Every change to a client's regional configuration goes through `commitRegional`, which adds the
 * increment of the client's `configVersion` (the client runtime item, read by the data plane on
 * every request) to the **same** TransactWriteItems as the change. A warm data plane therefore
 * sees the new version exactly when the change is visible, never later: a proxy set inactive or a
 * credential deleted stops traffic on the next request. The test stack checks that no
 * configuration item is written any other way (test/support/config-atomicity.ts).
 *
 * Kept apart from lib/db/store.ts and lib/db/regional.ts, which the data plane loads at its cold
 * start: it never writes configuration.
 */
import { keys } from "./keys.ts";
import { commitSteps, nowIso, type TransactionStep, tableName } from "./store.ts";

/** TransactWriteItems holds at most 100 actions; one of them is the version step. */
export const MAX_CHANGE_STEPS = 99;

/**
 * What a failed condition means to the writer: an error to throw, `"retry"` when the writer lost
 * an optimistic race (a counter or version it read has moved: it re-reads and tries again), or
 * undefined when the store's cancellation is rethrown as it is.
 */
export type Refusal = (failed: readonly string[]) => Error | "retry" | undefined;

/**
 * Write named steps in one TransactWriteItems. True when written; false when it lost a race with
 * another transaction, or `refusal` said "retry" (the caller retries). A failed condition is
 * answered by `refusal` (its error is thrown); any other cancellation or error is rethrown.
 */
export async function writeSteps(
  region: string,
  steps: readonly TransactionStep[],
  refusal: Refusal,
): Promise<boolean> {
  const lost = await commitSteps(steps, {
    region,
    cancelled: ({ failed, conflict }) => {
      const refused = failed.length > 0 ? refusal(failed) : undefined;
      if (refused === "retry") return "lost" as const;
      return refused ?? (conflict ? ("lost" as const) : undefined);
    },
  });
  return lost === undefined;
}

/** The step that moves the client's configuration version in a region (name `configVersion`). */
export function configVersionStep(clientId: string): TransactionStep {
  return {
    name: "configVersion",
    action: {
      Update: {
        TableName: tableName(),
        Key: keys.clientRuntime(clientId),
        UpdateExpression: "ADD configVersion :one SET clientId = :c, entity = :e, runtimeUpdated = :now",
        ExpressionAttributeValues: { ":one": 1, ":c": clientId, ":e": "clientRuntime", ":now": nowIso() },
      },
    },
  };
}

/** Refuse nothing: a failed condition is rethrown as the store's error. */
const noRefusal = () => undefined;

/**
 * Write a configuration change and the client's version increment in one TransactWriteItems.
 * True when written; false when it lost a race with another transaction (the caller re-reads and
 * retries: its steps were built from what it read). A failed condition is answered by `refusal`.
 */
export function tryCommitRegional(
  region: string,
  clientId: string,
  steps: readonly TransactionStep[],
  refusal: Refusal = noRefusal,
): Promise<boolean> {
  if (steps.length === 0 || steps.length > MAX_CHANGE_STEPS)
    throw new Error(`A configuration change takes 1 to ${MAX_CHANGE_STEPS} steps (got ${steps.length})`);
  return writeSteps(region, [...steps, configVersionStep(clientId)], refusal);
}

/**
 * Attempts of an optimistic writer (read, decide, write conditionally; re-read when another writer
 * committed first). Every commit moves the client's version, so concurrent changes of one client
 * meet there: 16 attempts serve about 15 parallel writers without a spurious 409.
 */
export const RACE_ATTEMPTS = 16;

/** A pause of 0 to 5 ms times the attempt, so that racing writers do not retry in step. */
export const lostRace = (attempt: number) =>
  new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));

/** Attempts of `commitRegional` against concurrent transactions on the same client. */
const COMMIT_ATTEMPTS = 12;

/**
 * `tryCommitRegional`, repeated with a jittered pause while it loses races: the same steps are
 * safe to send again (a cancelled transaction wrote nothing, and every condition is checked
 * anew). Concurrent changes of one client meet on its runtime item, so they take turns here.
 */
export async function commitRegional(
  region: string,
  clientId: string,
  steps: readonly TransactionStep[],
  refusal: Refusal = noRefusal,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    if (await tryCommitRegional(region, clientId, steps, refusal)) return;
    if (attempt >= COMMIT_ATTEMPTS) {
      const busy = new Error("The configuration change kept conflicting with concurrent transactions");
      busy.name = "TransactionConflictException";
      throw busy;
    }
    await new Promise((resolve) => setTimeout(resolve, 10 * attempt + Math.random() * 20 * attempt));
  }
}

/**
 * Many unconditional steps (a cascade's deletes), each chunk committed with the version step.
 * Idempotent: a rerun finds what is left.
 */
export async function commitRegionalInChunks(
  region: string,
  clientId: string,
  steps: readonly TransactionStep[],
): Promise<void> {
  for (let start = 0; start < steps.length; start += MAX_CHANGE_STEPS)
    await commitRegional(region, clientId, steps.slice(start, start + MAX_CHANGE_STEPS));
}

/** A Delete step for an item (no condition). */
export function deleteStep(key: { pKey: string; sKey: string }, name = "delete"): TransactionStep {
  return { name, action: { Delete: { TableName: tableName(), Key: key } } };
}
