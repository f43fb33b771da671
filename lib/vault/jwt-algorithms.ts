/**
 * The JWT signature algorithms a jwtVerify credential may allow. Kept apart from
 * secret-schemas.ts (which re-exports them) so the data plane can use them without loading zod.
 */
export const JWT_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "HS256",
  "HS384",
  "HS512",
] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

/** RFC 7518 3.2: an HMAC key at least as long as the hash output. */
export const HMAC_MIN_KEY_BYTES: Partial<Record<JwtAlgorithm, number>> = { HS256: 32, HS384: 48, HS512: 64 };
export const isHmacAlgorithm = (algorithm: JwtAlgorithm) => algorithm in HMAC_MIN_KEY_BYTES;
