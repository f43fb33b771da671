/**
 * Credentials (spec 2.5, 4.5): the vault. A secret given at creation is validated per auth type,
 * encrypted (KMS envelope, AES-256-GCM, lib/vault/envelope.ts) and stored only as ciphertext in
 * the credential's region; no response ever carries it and only metadata can change afterwards.
 */
import { randomUUID } from "node:crypto";
import { bumpConfigVersion } from "../data-plane/client-runtime.ts";
import { PutCommand } from "../db/document-client.ts";
import { keys, REGIONAL_SK } from "../db/keys.ts";
import { type Item, nowIso, nowSeconds, tableName, withoutInternals } from "../db/store.ts";
import type { CreateCredentialInput } from "../http/resource-schemas.ts";
import { credentialHeaderNames } from "../vault/apply-credential.ts";
import { encryptSecret, type SecretEnvelope } from "../vault/envelope.ts";
import type { OAuth2Secret } from "../vault/secret-schemas.ts";
import { parseCredentialSecret } from "../vault/secret-schemas.ts";
import type { ClientAccess } from "./access.ts";
import { deleteWithDependants, usesCredential } from "./cascade.ts";
import { badRequest, notFound } from "./errors.ts";
import { needsAuthorization, prepareAuthorization, saveAuthorizationState } from "./oauth2-flow.ts";
import {
  byCreatedDesc,
  findInRegions,
  listAcrossRegions,
  listInRegion,
  MAX_RESOURCES_PER_REGION,
  regionalDb,
  requireConfiguredRegion,
  updateRegionalItem,
} from "./regional.ts";

export const CREDENTIAL_NOT_FOUND = "Credential not found";
/** A temporary OAuth2 credential awaiting the provider's redirect expires after this long. */
export const TEMPORARY_CREDENTIAL_TTL_SECONDS = 3600;

/** Attributes that never leave the service. */
const HIDDEN = ["secretEnvelope", "deletingAt", "TTL", "jwksCache", "lastVerifiedTokenHash"];

export function toApiCredential(item: Item) {
  return {
    ...withoutInternals(item, HIDDEN),
    pKey: String(item.clientId),
    sKey: String(item.credentialId),
    credentialTemporary: item.credentialTemporary === true,
  };
}

export async function requireCredential(clientId: string, credentialId: string) {
  const found = await findInRegions(keys.credential(clientId, credentialId));
  if (!found) throw notFound(CREDENTIAL_NOT_FOUND);
  return found;
}

export interface CredentialDraft {
  clientId: string;
  userId: string;
  credentialId: string;
  region: string;
  input: CreateCredentialInput;
  secret: Record<string, unknown>;
  temporary?: boolean;
  extra?: Item;
}

/** Build and store the credential item (secret encrypted first, bound to client and credential). */
export async function storeCredential(draft: CredentialDraft): Promise<Item> {
  const { clientId, credentialId, region, input, secret } = draft;
  const envelope: SecretEnvelope = await encryptSecret({ region, clientId, credentialId, secret });
  const now = nowIso();
  const item: Item = {
    ...keys.credential(clientId, credentialId),
    entity: "credential",
    credentialId,
    credentialName: input.credentialName,
    credentialType: input.credentialType,
    credentialAuthType: input.authType,
    credentialRegion: region,
    credentialDefaultRuleEffect: input.credentialDefaultRuleEffect ?? "allow",
    singleUse: input.singleUse ?? false,
    ...(input.notes !== undefined ? { notes: input.notes } : {}),
    // Names of the headers that carry this credential's secret: the request log redacts them.
    credentialSecretHeaders: credentialHeaderNames(input.authType as never, secret as never),
    userId: draft.userId,
    clientId,
    parentId: clientId,
    credentialCreatedAt: now,
    credentialUpdatedAt: now,
    secretEnvelope: envelope,
    ...(draft.temporary
      ? { credentialTemporary: true, TTL: nowSeconds() + TEMPORARY_CREDENTIAL_TTL_SECONDS }
      : {}),
    ...draft.extra,
  };
  await regionalDb(region).send(
    new PutCommand({ TableName: tableName(), Item: item, ConditionExpression: "attribute_not_exists(pKey)" }),
  );
  await bumpConfigVersion(region, clientId);
  return item;
}

/** Validate the request (metadata, region, secret shape for the auth type and use) before any write. */
export async function prepareCredential({ clientId }: ClientAccess, input: CreateCredentialInput) {
  const region = requireConfiguredRegion(input.region, "region");
  const secret = parseCredentialSecret(input.credentialType, input.authType, input.secret) as Record<
    string,
    unknown
  >;
  const existing = await listInRegion(region, clientId, REGIONAL_SK.credentialPrefix);
  if (existing.length >= MAX_RESOURCES_PER_REGION)
    throw badRequest(`A client can have at most ${MAX_RESOURCES_PER_REGION} credentials per region`);
  return { region, secret, credentialId: randomUUID() };
}

/**
 * Create a credential. An OAuth2 authorization_code / PKCE credential is stored as temporary
 * until the provider redirects back (lib/domain/oauth2-flow.ts) and comes with the URL to open.
 */
export async function createCredential(
  access: ClientAccess,
  input: CreateCredentialInput,
  baseUrl: string,
): Promise<{ credential: ReturnType<typeof toApiCredential>; authorizationUrl?: string }> {
  const { clientId, userId } = access;
  const prepared = await prepareCredential(access, input);
  if (!needsAuthorization(input.authType, prepared.secret)) {
    const item = await storeCredential({ clientId, userId, input, ...prepared });
    return { credential: toApiCredential(item) };
  }
  const flow = prepareAuthorization(prepared.secret as OAuth2Secret, baseUrl);
  const item = await storeCredential({
    clientId,
    userId,
    input,
    ...prepared,
    secret: flow.storedSecret,
    temporary: true,
  });
  await saveAuthorizationState(flow.state, {
    clientId,
    credentialId: prepared.credentialId,
    region: prepared.region,
  });
  return { credential: toApiCredential(item), authorizationUrl: flow.authorizationUrl };
}

export async function listCredentials({ clientId }: ClientAccess, includeTemporary: boolean) {
  const items = await listAcrossRegions(clientId, REGIONAL_SK.credentialPrefix);
  return items
    .filter((item) => includeTemporary || item.credentialTemporary !== true)
    .sort(byCreatedDesc("credentialCreatedAt", "credentialId"))
    .map(toApiCredential);
}

export async function getCredential({ clientId }: ClientAccess, credentialId: string) {
  return toApiCredential((await requireCredential(clientId, credentialId)).item);
}

/** Only metadata changes (name, notes, default rule effect); the secret never does. */
export async function updateCredential(
  { clientId }: ClientAccess,
  credentialId: string,
  input: { credentialName?: string; notes?: string; credentialDefaultRuleEffect?: string },
) {
  const { region } = await requireCredential(clientId, credentialId);
  const item = await updateRegionalItem(
    region,
    clientId,
    keys.credential(clientId, credentialId),
    input,
    "credentialUpdatedAt",
    CREDENTIAL_NOT_FOUND,
  );
  return toApiCredential(item);
}

/**
 * Delete a credential, the proxies that use it (as proxy or target credential) and its rules;
 * ordered and idempotent (lib/domain/cascade.ts). The secret goes with the item.
 */
export async function deleteCredential({ clientId }: ClientAccess, credentialId: string) {
  const { region } = await requireCredential(clientId, credentialId);
  const deletedProxies = await deleteWithDependants(
    region,
    clientId,
    credentialId,
    keys.credential(clientId, credentialId),
    usesCredential(credentialId),
  );
  return { deletedProxies };
}
