/**
 * Envelope encryption of credential secrets (DESIGN.md "Secrets"):
 * - KMS GenerateDataKey (AES_256) under the region's key alias, with the encryption context
 *   `{clientId, credentialId}`: the wrapped data key can only be unwrapped for that credential;
 * - AES-256-GCM with Node's crypto, a random 12-byte IV per encryption, and additional
 *   authenticated data binding the same ids: a ciphertext copied onto another credential fails
 *   authentication even with a cached data key;
 * - only the envelope (wrapped key, IV, tag, ciphertext) is stored; plaintext data keys are zeroed
 *   after use and plaintext is never logged.
 *
 * The warm data plane must not call KMS per request, so `decryptSecretCached` keeps unwrapped data
 * keys in memory for a short time (bounded count, TTL). The cache key includes the region and the
 * encryption context, so a lookup for another credential never finds the entry.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import * as z from "zod/mini";
import { kms } from "#lib/aws/clients.ts";
import { getConfig } from "#lib/config.ts";

export const ENVELOPE_VERSION = 1;
export const ENVELOPE_ALGORITHM = "AES-256-GCM";
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/** What is stored in place of the secret. Binary fields are base64. */
export interface SecretEnvelope {
  v: 1;
  alg: "AES-256-GCM";
  /** ARN of the KMS key that wrapped the data key. */
  keyId: string;
  encryptedDataKey: string;
  iv: string;
  tag: string;
  ciphertext: string;
}

export interface SecretContext {
  region: string;
  clientId: string;
  credentialId: string;
}

export type SecretEnvelopeFailure = "malformed" | "integrity" | "kms";

/**
 * Decryption failed. `integrity`: the envelope does not belong to this credential or was altered
 * (wrong encryption context, tampered ciphertext/tag/IV); `malformed`: not an envelope of this
 * version; `kms`: KMS could not be used (access, throttling, network): `cause` has the SDK error.
 * Messages never contain key material or plaintext.
 */
export class SecretEnvelopeError extends Error {
  override name = "SecretEnvelopeError";
  readonly reason: SecretEnvelopeFailure;
  constructor(reason: SecretEnvelopeFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

const base64 = z.string().check(z.regex(/^[A-Za-z0-9+/]*={0,2}$/));
const EnvelopeSchema = z.object({
  v: z.literal(ENVELOPE_VERSION),
  alg: z.literal(ENVELOPE_ALGORITHM),
  keyId: z.string().check(z.minLength(1)),
  encryptedDataKey: base64.check(z.minLength(1)),
  iv: base64.check(z.refine((value) => Buffer.from(value, "base64").length === IV_BYTES)),
  tag: base64.check(z.refine((value) => Buffer.from(value, "base64").length === TAG_BYTES)),
  ciphertext: base64,
});

/** The KMS commands, loaded with the client on first use (lib/aws/clients.ts kms). */
const kmsCommands = () => import("#lib/aws/kms-client.ts");

const encryptionContext = ({ clientId, credentialId }: SecretContext) => ({ clientId, credentialId });

/** Additional authenticated data: an unambiguous encoding of the version and both ids. */
const additionalData = ({ clientId, credentialId }: SecretContext) =>
  Buffer.from(JSON.stringify(["proxy-gateway/credential-secret", ENVELOPE_VERSION, clientId, credentialId]));

/** A Buffer over the SDK's Uint8Array (no copy), so zeroing it wipes the SDK's bytes too. */
const viewOf = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

export async function encryptSecret(input: SecretContext & { secret: unknown }): Promise<SecretEnvelope> {
  const json = JSON.stringify(input.secret);
  if (json === undefined) throw new TypeError("The secret must be JSON-serialisable");
  const [client, { GenerateDataKeyCommand }] = await Promise.all([kms(input.region), kmsCommands()]);
  const generated = await client.send(
    new GenerateDataKeyCommand({
      KeyId: getConfig().kmsKeyAlias,
      KeySpec: "AES_256",
      EncryptionContext: encryptionContext(input),
    }),
  );
  if (!generated.Plaintext || !generated.CiphertextBlob || !generated.KeyId) {
    throw new Error("KMS GenerateDataKey returned an incomplete answer");
  }
  const dataKey = viewOf(generated.Plaintext);
  const plaintext = Buffer.from(json, "utf8");
  try {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", dataKey, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(additionalData(input));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return {
      v: ENVELOPE_VERSION,
      alg: ENVELOPE_ALGORITHM,
      keyId: generated.KeyId,
      encryptedDataKey: Buffer.from(generated.CiphertextBlob).toString("base64"),
      iv: iv.toString("base64"),
      tag: cipher.getAuthTag().toString("base64"),
      ciphertext: ciphertext.toString("base64"),
    };
  } finally {
    dataKey.fill(0);
    plaintext.fill(0);
  }
}

function parseEnvelope(envelope: unknown): SecretEnvelope {
  const parsed = EnvelopeSchema.safeParse(envelope);
  if (!parsed.success)
    throw new SecretEnvelopeError("malformed", "The stored secret is not a valid envelope");
  return parsed.data as SecretEnvelope;
}

/** Unwrap the data key with KMS, bound to the credential's encryption context. */
async function unwrapDataKey(envelope: SecretEnvelope, context: SecretContext): Promise<Buffer> {
  let answer: { Plaintext?: Uint8Array };
  try {
    const [client, { DecryptCommand }] = await Promise.all([kms(context.region), kmsCommands()]);
    answer = await client.send(
      new DecryptCommand({
        KeyId: envelope.keyId,
        CiphertextBlob: Buffer.from(envelope.encryptedDataKey, "base64"),
        EncryptionContext: encryptionContext(context),
      }),
    );
  } catch (error) {
    const name = error instanceof Error ? error.name : "";
    if (name === "InvalidCiphertextException" || name === "IncorrectKeyException") {
      throw new SecretEnvelopeError("integrity", "The secret's data key does not belong to this credential", {
        cause: error,
      });
    }
    throw new SecretEnvelopeError("kms", `KMS could not decrypt the secret's data key (${name || "error"})`, {
      cause: error,
    });
  }
  if (!answer.Plaintext || answer.Plaintext.byteLength !== KEY_BYTES) {
    throw new SecretEnvelopeError("kms", "KMS returned no usable data key");
  }
  const key = Buffer.from(answer.Plaintext); // our own copy...
  viewOf(answer.Plaintext).fill(0); // ...and the SDK's bytes wiped
  return key;
}

function openEnvelope<T>(envelope: SecretEnvelope, dataKey: Buffer, context: SecretContext): T {
  let plaintext: Buffer | undefined;
  try {
    const decipher = createDecipheriv("aes-256-gcm", dataKey, Buffer.from(envelope.iv, "base64"), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(additionalData(context));
    decipher.setAuthTag(Buffer.from(envelope.tag, "base64"));
    plaintext = Buffer.concat([
      decipher.update(Buffer.from(envelope.ciphertext, "base64")),
      decipher.final(),
    ]);
  } catch (error) {
    throw new SecretEnvelopeError("integrity", "The secret failed authentication for this credential", {
      cause: error,
    });
  }
  try {
    return JSON.parse(plaintext.toString("utf8")) as T;
  } catch {
    throw new SecretEnvelopeError("malformed", "The decrypted secret is not JSON");
  } finally {
    plaintext.fill(0);
  }
}

/** Decrypt with one KMS call. Fails with `integrity` for another credential's context. */
export async function decryptSecret<T>(envelope: SecretEnvelope, context: SecretContext): Promise<T> {
  const parsed = parseEnvelope(envelope);
  const dataKey = await unwrapDataKey(parsed, context);
  try {
    return openEnvelope<T>(parsed, dataKey, context);
  } finally {
    dataKey.fill(0);
  }
}

// ---------------------------------------------------------------------------------------------
// Data-key cache of the warm data plane
// ---------------------------------------------------------------------------------------------

export const DATA_KEY_CACHE_TTL_MS = 5 * 60_000;
export const DATA_KEY_CACHE_MAX_ENTRIES = 256;

interface CachedDataKey {
  key: Buffer;
  expiresAt: number;
}

const dataKeys = new Map<string, CachedDataKey>();
const pending = new Map<string, Promise<void>>();
/** Bumped by clearDataKeyCache, so an unwrap started before a clear does not refill the cache. */
let generation = 0;

const cacheKeyOf = (envelope: SecretEnvelope, context: SecretContext) =>
  JSON.stringify([context.region, context.clientId, context.credentialId, envelope.encryptedDataKey]);

function evict(cacheKey: string): void {
  const entry = dataKeys.get(cacheKey);
  if (!entry) return;
  entry.key.fill(0);
  dataKeys.delete(cacheKey);
}

function remember(cacheKey: string, key: Buffer): void {
  evict(cacheKey);
  const now = Date.now();
  for (const [k, entry] of dataKeys) {
    if (entry.expiresAt <= now) evict(k);
  }
  while (dataKeys.size >= DATA_KEY_CACHE_MAX_ENTRIES) {
    const oldest = dataKeys.keys().next().value as string;
    evict(oldest);
  }
  dataKeys.set(cacheKey, { key, expiresAt: now + DATA_KEY_CACHE_TTL_MS });
}

/**
 * As `decryptSecret`, but reuses the unwrapped data key for DATA_KEY_CACHE_TTL_MS: a warm process
 * makes one KMS call per credential per TTL. Concurrent cold calls share one KMS call. AES-GCM
 * still authenticates every decryption against the credential's ids.
 */
export async function decryptSecretCached<T>(envelope: SecretEnvelope, context: SecretContext): Promise<T> {
  const parsed = parseEnvelope(envelope);
  const cacheKey = cacheKeyOf(parsed, context);
  const hit = dataKeys.get(cacheKey);
  if (hit && hit.expiresAt > Date.now()) return openEnvelope<T>(parsed, hit.key, context);
  if (hit) evict(cacheKey);

  let unwrapping = pending.get(cacheKey);
  if (!unwrapping) {
    const startedIn = generation;
    unwrapping = unwrapDataKey(parsed, context)
      .then((key) => {
        if (startedIn === generation) remember(cacheKey, key);
        else key.fill(0);
      })
      .finally(() => {
        if (pending.get(cacheKey) === unwrapping) pending.delete(cacheKey);
      });
    pending.set(cacheKey, unwrapping);
  }
  await unwrapping;
  // Read the entry again: between the unwrap and now it may have been evicted (and zeroed).
  const entry = dataKeys.get(cacheKey);
  if (entry) return openEnvelope<T>(parsed, entry.key, context);
  return decryptSecret<T>(parsed, context);
}

/** Forget (and zero) every cached data key: tests, and after a credential is deleted. */
export function clearDataKeyCache(): void {
  for (const cacheKey of [...dataKeys.keys()]) evict(cacheKey);
  pending.clear();
  generation++;
}

/** How many data keys are cached (tests and diagnostics). */
export function dataKeyCacheSize(): number {
  return dataKeys.size;
}
