/**
 * Credentials (spec 2.5, 4.5): the vault. A secret given at creation is validated per auth type,
 * encrypted (KMS envelope, AES-256-GCM, lib/vault/envelope.ts) and stored only as ciphertext in
 * the credential's region; no response ever carries it and only metadata can change afterwards.
 */
import { randomUUID } from "node:crypto";
import { commitRegional } from "#lib/db/commit.ts";
import {
  type CredentialItem,
  credentialItemOf,
  credentialKeys,
  findCredentialInAnyRegion,
  listCredentialsOfClient,
  listCredentialsOfClientInRegion,
} from "#lib/db/entities/credential.ts";
import { byCreatedDesc, MAX_RESOURCES_PER_REGION } from "#lib/db/regional.ts";
import { type Item, nowIso, nowSeconds, tableName } from "#lib/db/store.ts";
import type { CreateCredentialInput } from "#lib/http/resource-schemas.ts";
import { badRequest, notFound } from "#lib/shared/errors.ts";
import { credentialHeaderNames } from "#lib/vault/apply-credential.ts";
import { encryptSecret, type SecretEnvelope } from "#lib/vault/envelope.ts";
import {
  type AuthType,
  type CredentialSecret,
  isAuthType,
  type OAuth2Secret,
  parseCredentialSecret,
} from "#lib/vault/secret-schemas.ts";
import type { ClientAccess } from "./access.ts";
import { deleteWithDependants, usesCredential } from "./cascade.ts";
import { requireAllowedRegion } from "./msp-enforcement.ts";
import {
  type AuthorizationReturn,
  needsAuthorization,
  prepareAuthorization,
  saveAuthorizationState,
} from "./oauth2-flow.ts";
import { updateRegionalItem } from "./regional.ts";

export const CREDENTIAL_NOT_FOUND = "Credential not found";
/** A temporary OAuth2 credential awaiting the provider's redirect expires after this long. */
export const TEMPORARY_CREDENTIAL_TTL_SECONDS = 3600;

/**
 * The credential as the API shows it: metadata only. The secret's envelope and the internal
 * attributes are left out here, and the response schema (lib/api/operations/credentials.ts) picks
 * the fields that leave. The OAuth2 callback hands over the stored item it updated, read here.
 */
export function toApiCredential(stored: CredentialItem | Item) {
  const {
    pKey: _pKey,
    sKey: _sKey,
    entity: _entity,
    secretEnvelope: _secretEnvelope,
    deletingAt: _deletingAt,
    TTL: _ttl,
    jwksCache: _jwksCache,
    ...metadata
  } = credentialItemOf(stored);
  return {
    ...metadata,
    pKey: metadata.clientId,
    sKey: metadata.credentialId,
    credentialTemporary: metadata.credentialTemporary === true,
  };
}

export async function requireCredential(
  clientId: string,
  credentialId: string,
): Promise<{ region: string; credential: CredentialItem }> {
  const found = await findCredentialInAnyRegion(clientId, credentialId);
  if (!found) throw notFound(CREDENTIAL_NOT_FOUND);
  return found;
}

export interface CredentialDraft {
  clientId: string;
  userId: string;
  credentialId: string;
  region: string;
  input: CreateCredentialInput;
  /** The auth type of `input`, as checked with the secret (prepareCredential). */
  authType: AuthType;
  secret: CredentialSecret;
  temporary?: boolean;
}

/** Build and store the credential item (secret encrypted first, bound to client and credential). */
export async function storeCredential(draft: CredentialDraft): Promise<CredentialItem> {
  const { clientId, credentialId, region, input, authType, secret } = draft;
  const envelope: SecretEnvelope = await encryptSecret({ region, clientId, credentialId, secret });
  const now = nowIso();
  const item: CredentialItem = {
    ...credentialKeys.item(clientId, credentialId),
    entity: "credential",
    credentialId,
    credentialName: input.credentialName,
    credentialType: input.credentialType,
    credentialAuthType: authType,
    credentialRegion: region,
    credentialDefaultRuleEffect: input.credentialDefaultRuleEffect ?? "allow",
    singleUse: input.singleUse ?? false,
    ...(input.notes !== undefined ? { notes: input.notes } : {}),
    // Names of the headers that carry this credential's secret: the request log redacts them.
    credentialSecretHeaders: credentialHeaderNames(authType, secret),
    userId: draft.userId,
    clientId,
    parentId: clientId,
    credentialCreatedAt: now,
    credentialUpdatedAt: now,
    secretEnvelope: envelope,
    ...(draft.temporary
      ? { credentialTemporary: true, TTL: nowSeconds() + TEMPORARY_CREDENTIAL_TTL_SECONDS }
      : {}),
  };
  await commitRegional(region, clientId, [
    {
      name: "put",
      action: {
        Put: { TableName: tableName(), Item: item, ConditionExpression: "attribute_not_exists(pKey)" },
      },
    },
  ]);
  return item;
}

/** Validate the request (metadata, region, secret shape for the auth type and use) before any write. */
export async function prepareCredential({ clientId }: ClientAccess, input: CreateCredentialInput) {
  const region = await requireAllowedRegion(clientId, input.region, "region");
  const secret = parseCredentialSecret(input.credentialType, input.authType, input.secret);
  const authType = input.authType;
  // parseCredentialSecret refused any other auth type; this narrows the type.
  if (!isAuthType(authType)) throw new Error(`Unchecked auth type ${authType}`);
  const existing = await listCredentialsOfClientInRegion(region, clientId);
  if (existing.length >= MAX_RESOURCES_PER_REGION)
    throw badRequest(`A client can have at most ${MAX_RESOURCES_PER_REGION} credentials per region`);
  return { region, authType, secret, credentialId: randomUUID() };
}

/**
 * Create a credential. An OAuth2 authorization_code / PKCE credential is stored as temporary
 * until the provider redirects back (lib/domain/oauth2-flow.ts) and comes with the URL to open.
 */
export async function createCredential(
  access: ClientAccess,
  input: CreateCredentialInput,
  baseUrl: string,
  /** Where the provider's redirect ends (an authorization flow): the console's page, or JSON. */
  returnTo: AuthorizationReturn = "api",
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
    returnTo,
  });
  return { credential: toApiCredential(item), authorizationUrl: flow.authorizationUrl };
}

export async function listCredentials({ clientId }: ClientAccess, includeTemporary: boolean) {
  const credentials = await listCredentialsOfClient(clientId);
  return credentials
    .filter((credential) => includeTemporary || credential.credentialTemporary !== true)
    .sort(byCreatedDesc("credentialCreatedAt", "credentialId"))
    .map(toApiCredential);
}

export async function getCredential({ clientId }: ClientAccess, credentialId: string) {
  return toApiCredential((await requireCredential(clientId, credentialId)).credential);
}

/** Only metadata changes (name, notes, default rule effect); the secret never does. */
export async function updateCredential(
  { clientId }: ClientAccess,
  credentialId: string,
  input: { credentialName?: string; notes?: string; credentialDefaultRuleEffect?: string },
) {
  const { region } = await requireCredential(clientId, credentialId);
  const updated = await updateRegionalItem(
    region,
    clientId,
    credentialKeys.item(clientId, credentialId),
    input,
    "credentialUpdatedAt",
    CREDENTIAL_NOT_FOUND,
  );
  return toApiCredential(credentialItemOf(updated));
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
    credentialKeys.item(clientId, credentialId),
    usesCredential(credentialId),
  );
  return { deletedProxies };
}
