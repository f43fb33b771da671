/**
 * The credential entity (spec 2.5) as stored: its item schema, its keys and the access patterns
 * that read it (docs/access-patterns.md). The domain (lib/domain/credentials.ts) works on
 * CredentialItem, never on an untyped item.
 *
 * The secret is stored only as its envelope (lib/vault/envelope.ts), kept as it is: this module
 * never decrypts it, and a refusal names fields, never values.
 */
import * as z from "zod/mini";
import { keys, REGIONAL_SK } from "#lib/db/keys.ts";
import { findInRegions, listAcrossRegions, listInRegion } from "#lib/db/regional.ts";
import { parseStored } from "#lib/db/store.ts";
import { AUTH_TYPES, CREDENTIAL_TYPES } from "#lib/shared/auth-types.ts";
import type { SecretEnvelope } from "#lib/vault/envelope.ts";

/** The encrypted secret as stored; its fields are checked when it is decrypted (lib/vault/envelope.ts). */
const StoredSecretEnvelope: z.ZodMiniType<SecretEnvelope> = z.looseObject({
  v: z.literal(1),
  alg: z.literal("AES-256-GCM"),
  keyId: z.string(),
  encryptedDataKey: z.string(),
  iv: z.string(),
  tag: z.string(),
  ciphertext: z.string(),
});

export const CredentialItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("credential"),
  credentialId: z.string(),
  clientId: z.string(),
  userId: z.string(),
  parentId: z.string(),
  credentialName: z.string(),
  credentialType: z.enum(CREDENTIAL_TYPES),
  credentialAuthType: z.enum(AUTH_TYPES),
  /** Immutable: the secret is encrypted with this region's key. */
  credentialRegion: z.string(),
  credentialDefaultRuleEffect: z.enum(["allow", "deny"]),
  singleUse: z.boolean(),
  notes: z.optional(z.string()),
  /** Names of the headers that carry the secret: the request log redacts them. */
  credentialSecretHeaders: z.optional(z.array(z.string())),
  credentialCreatedAt: z.string(),
  credentialUpdatedAt: z.string(),
  secretEnvelope: StoredSecretEnvelope,
  /** An OAuth2 authorization_code / PKCE credential waiting for the provider's redirect. */
  credentialTemporary: z.optional(z.boolean()),
  /** Expiry (epoch seconds) of a temporary credential. */
  TTL: z.optional(z.number()),
  oauthAuthorizedAt: z.optional(z.string()),
  oauthRefreshedAt: z.optional(z.string()),
  /** Set while a single-use proxy credential's one request is in flight (lib/data-plane/stages/claim.ts). */
  usedAt: z.optional(z.string()),
  /** A jwtVerify credential's fetched keys, owned and read by the data plane (runtime-config.ts). */
  jwksCache: z.optional(z.unknown()),
  /** Set when a cascade has started deleting the credential. */
  deletingAt: z.optional(z.string()),
});
export type CredentialItem = z.infer<typeof CredentialItem>;

/** A stored item as a CredentialItem; an item that is not one is a defect of the store, not of the caller. */
export const credentialItemOf = (item: Record<string, unknown>): CredentialItem =>
  parseStored(CredentialItem, "credential", { entity: "credential", ...item });

export const credentialKeys = {
  item: keys.credential,
} as const;

/** Access pattern "credential by id" (region unknown): one GetItem per region, in parallel. */
export async function findCredentialInAnyRegion(
  clientId: string,
  credentialId: string,
): Promise<{ region: string; credential: CredentialItem } | undefined> {
  const found = await findInRegions(credentialKeys.item(clientId, credentialId));
  return found ? { region: found.region, credential: credentialItemOf(found.item) } : undefined;
}

/** Access pattern "credentials of a client": one Query per region on the client partition. */
export async function listCredentialsOfClient(clientId: string): Promise<CredentialItem[]> {
  return (await listAcrossRegions(clientId, REGIONAL_SK.credentialPrefix)).map(credentialItemOf);
}

/** Access pattern "credentials of a client in one region" (the per-region cap). */
export async function listCredentialsOfClientInRegion(
  region: string,
  clientId: string,
): Promise<CredentialItem[]> {
  return (await listInRegion(region, clientId, REGIONAL_SK.credentialPrefix)).map(credentialItemOf);
}
