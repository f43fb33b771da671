/**
 * Where each loaded credential's record is (proxy configuration loads remember it), so that keys
 * fetched for a jwtVerify credential can be written back onto its record (spec 5.4: a cold function
 * starts with the stored keys instead of fetching the JWKS again). Kept apart from the JWKS cache
 * itself, which is loaded on the first jwtVerify request only (docs/performance.md).
 */
import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import { tableName } from "#lib/db/store.ts";
import type { JwksDocument } from "./jwks-cache.ts";

/** credentialId -> where its record is. */
const credentialHomes = new Map<string, { region: string; clientId: string }>();
const MAX_HOMES = 4000;

export function rememberCredentialHome(credentialId: string, region: string, clientId: string): void {
  if (credentialHomes.size >= MAX_HOMES) credentialHomes.clear();
  credentialHomes.set(credentialId, { region, clientId });
}

/** Stores freshly fetched public keys on the credential record (the JWKS cache's `persist`). */
export async function persistJwks(credentialId: string, jwks: JwksDocument): Promise<void> {
  const home = credentialHomes.get(credentialId);
  if (!home) return;
  await dynamo(home.region).send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.credential(home.clientId, credentialId),
      UpdateExpression: "SET jwksCache = :jwks",
      ConditionExpression: "attribute_exists(pKey)",
      ExpressionAttributeValues: { ":jwks": jwks },
    }),
  );
}
