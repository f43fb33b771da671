/**
 * The single-use proxy credential (spec 2.5): one request may ever pass it. The forward stage
 * claims it (a conditional write) just before calling the target; the pipeline settles the claim
 * in one place, on every path: a successful answer of the target consumes the credential (it is
 * deleted with the proxies using it), any other outcome releases it for a new attempt.
 */
import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import type { RequestContext } from "#lib/data-plane/context.ts";
import { credentialKeys } from "#lib/db/entities/credential.ts";
import { isConditionalCheckFailure, tableName } from "#lib/db/store.ts";
import { describeError, log } from "#lib/log.ts";

export interface SingleUseClaims {
  claim(clientId: string, credentialId: string): Promise<boolean>;
  release(clientId: string, credentialId: string): Promise<void>;
  consume(clientId: string, credentialId: string): Promise<void>;
}

export function singleUseClaims(region: string): SingleUseClaims {
  return {
    async claim(clientId, credentialId) {
      try {
        await dynamo(region).send(
          new UpdateCommand({
            TableName: tableName(),
            Key: credentialKeys.item(clientId, credentialId),
            UpdateExpression: "SET usedAt = :now",
            ConditionExpression:
              "attribute_exists(pKey) AND attribute_not_exists(usedAt) AND attribute_not_exists(deletingAt)",
            ExpressionAttributeValues: { ":now": new Date().toISOString() },
          }),
        );
        return true;
      } catch (error) {
        if (isConditionalCheckFailure(error)) return false;
        throw error;
      }
    },
    async release(clientId, credentialId) {
      await dynamo(region).send(
        new UpdateCommand({
          TableName: tableName(),
          Key: credentialKeys.item(clientId, credentialId),
          UpdateExpression: "REMOVE usedAt",
          ConditionExpression: "attribute_exists(pKey)",
        }),
      );
    },
    async consume(clientId, credentialId) {
      // The cascade code is loaded on demand: only single-use credentials are consumed.
      const { deleteWithDependants, usesCredential } = await import("#lib/domain/cascade.ts");
      await deleteWithDependants(
        region,
        clientId,
        credentialId,
        credentialKeys.item(clientId, credentialId),
        usesCredential(credentialId),
      );
    },
  };
}

/**
 * Settle the request's claim, if it holds one: consumed when the target answered with success,
 * released otherwise. Never throws (a failure is logged): the answer is already decided.
 */
export async function settleClaim(
  ctx: RequestContext,
  claims: SingleUseClaims,
  success: boolean,
): Promise<void> {
  const held = ctx.claim;
  if (!held) return;
  ctx.claim = undefined;
  try {
    if (success) await claims.consume(held.clientId, held.credentialId);
    else await claims.release(held.clientId, held.credentialId);
  } catch (error) {
    log.error(
      success ? "Single-use credential could not be deleted" : "Single-use claim could not be released",
      {
        ...describeError(error),
        credentialId: held.credentialId,
      },
    );
  }
}
