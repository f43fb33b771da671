/**
 * JWT signing with a key that never leaves KMS (docs/mcp-oauth.md): an asymmetric KMS key
 * (ECC_NIST_P256, SIGN_VERIFY) signs the JWS input with kms:Sign (ECDSA_SHA_256, ES256); the
 * public key, read once per warm function with kms:GetPublicKey, verifies with `jose`.
 */
import { createPublicKey, type KeyObject } from "node:crypto";
import { GetPublicKeyCommand, SignCommand } from "@aws-sdk/client-kms";
import { kms } from "#lib/aws/clients.ts";
import { getConfig } from "#lib/config.ts";

export const JWT_ALGORITHM = "ES256";
const KMS_SIGNING_ALGORITHM = "ECDSA_SHA_256";
/** Bytes of each of r and s in an ES256 signature (RFC 7518 3.4). */
const P256_COORDINATE_BYTES = 32;

/**
 * KMS returns an ECDSA signature DER-encoded (SEQUENCE of INTEGER r, INTEGER s); a JWS carries
 * r and s as fixed-size big-endian numbers, one after the other (RFC 7518 3.4).
 */
export function derToJoseSignature(der: Uint8Array, size = P256_COORDINATE_BYTES): Buffer {
  let offset = 0;
  const fail = (): never => {
    throw new Error("Not a DER-encoded ECDSA signature");
  };
  const readLength = () => {
    const first = der[offset++] ?? fail();
    if (first < 0x80) return first;
    if (first !== 0x81) fail();
    return der[offset++] ?? fail();
  };
  const readInteger = () => {
    if (der[offset++] !== 0x02) fail();
    const length = readLength();
    let value = der.subarray(offset, offset + length);
    if (value.length !== length) fail();
    offset += length;
    while (value.length > 0 && value[0] === 0) value = value.subarray(1);
    if (value.length > size) fail();
    const fixed = Buffer.alloc(size);
    fixed.set(value, size - value.length);
    return fixed;
  };
  if (der[offset++] !== 0x30) fail();
  if (readLength() !== der.length - offset) fail();
  const r = readInteger();
  const s = readInteger();
  if (offset !== der.length) fail();
  return Buffer.concat([r, s]);
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value), "utf8").toString("base64url");

/** A compact JWS of `payload`, signed by the configured KMS key. */
export async function signJwt(header: Record<string, unknown>, payload: Record<string, unknown>) {
  const input = `${base64url({ ...header, alg: JWT_ALGORITHM })}.${base64url(payload)}`;
  const config = getConfig();
  const client = await kms(config.homeRegion);
  const signed = await client.send(
    new SignCommand({
      KeyId: config.oauthSigningKeyId,
      Message: Buffer.from(input, "utf8"),
      MessageType: "RAW",
      SigningAlgorithm: KMS_SIGNING_ALGORITHM,
    }),
  );
  if (!signed.Signature) throw new Error("KMS Sign returned no signature");
  return `${input}.${derToJoseSignature(signed.Signature).toString("base64url")}`;
}

const publicKeys = new Map<string, Promise<KeyObject>>();

/** The signing key's public half, read from KMS once per warm function (per key id). */
export function signingPublicKey(): Promise<KeyObject> {
  const config = getConfig();
  const cacheKey = `${config.homeRegion}/${config.oauthSigningKeyId}`;
  let key = publicKeys.get(cacheKey);
  if (!key) {
    key = (async () => {
      const client = await kms(config.homeRegion);
      const answer = await client.send(new GetPublicKeyCommand({ KeyId: config.oauthSigningKeyId }));
      if (!answer.PublicKey) throw new Error("KMS GetPublicKey returned no key");
      return createPublicKey({ key: Buffer.from(answer.PublicKey), format: "der", type: "spki" });
    })();
    // A failed read is not cached: the next request tries again.
    key.catch(() => publicKeys.delete(cacheKey));
    publicKeys.set(cacheKey, key);
  }
  return key;
}
