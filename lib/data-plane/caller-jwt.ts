/**
 * The verification of a jwtVerify caller's token (spec 5.4; caller-auth.ts): the header's
 * algorithm against the credential's, the key (shared secret, or the JWKS cache), jose's checks
 * (signature, iss, aud, exp required, nbf, clock skew), then sub (trailing `*` wildcard) and the
 * required claims. Loaded on demand by caller-auth.ts when a token has to be verified: a cold start
 * and every other auth type do without it (docs/performance.md).
 */
import type { JWTPayload, ProtectedHeaderParameters } from "jose";
import { isHmacAlgorithm, JWT_ALGORITHMS, type JwtAlgorithm } from "#lib/vault/jwt-algorithms.ts";
import type { JwtVerifySecret } from "#lib/vault/secret-schemas.ts";
import { type JwksCache, jwksCache, loadJose, type VerificationKey } from "./jwks-cache.ts";

export type Verified = { ok: true; payload: JWTPayload } | { ok: false; reason: string };

const deny = (reason: string): Verified => ({ ok: false, reason });

const ALLOWED_ALGORITHMS: ReadonlySet<string> = new Set(JWT_ALGORITHMS);

function subjectMatches(pattern: string, sub: unknown): boolean {
  if (typeof sub !== "string") return false;
  if (pattern.endsWith("*")) return sub.startsWith(pattern.slice(0, -1));
  return sub === pattern;
}

type ClaimValue = NonNullable<JwtVerifySecret["requiredClaims"]>[string];

function claimMatches(expected: ClaimValue, actual: unknown): boolean {
  const accepted: readonly unknown[] = Array.isArray(expected) ? expected : [expected];
  if (Array.isArray(actual)) return actual.some((value) => accepted.includes(value));
  return accepted.includes(actual);
}

/** The name of the first required claim that does not match, or undefined. */
function failingClaim(payload: JWTPayload, required: JwtVerifySecret["requiredClaims"]): string | undefined {
  for (const [name, expected] of Object.entries(required ?? {})) {
    const actual = Object.hasOwn(payload, name) ? payload[name] : undefined;
    if (actual === undefined || !claimMatches(expected, actual)) return name;
  }
  return undefined;
}

function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  switch (code) {
    case "ERR_JWT_EXPIRED":
      return "token expired";
    case "ERR_JWT_CLAIM_VALIDATION_FAILED": {
      const claim = (error as { claim?: unknown }).claim;
      return typeof claim === "string" && claim !== "unspecified"
        ? `claim ${claim} invalid`
        : "claims invalid";
    }
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return "invalid signature";
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return "algorithm not allowed";
    case "ERR_JWS_INVALID":
    case "ERR_JWT_INVALID":
      return "malformed token";
    case "ERR_JOSE_NOT_SUPPORTED":
      return "unsupported token";
    default:
      return "token verification failed";
  }
}

/** Verifies `token` for the credential; the payload, or the short reason of the refusal. */
export async function verifyJwt(
  token: string,
  credentialId: string,
  secret: JwtVerifySecret,
  options: { jwks: JwksCache | undefined; now: number; skew: number; stats: { verifications: number } },
): Promise<Verified> {
  const { decodeProtectedHeader, jwtVerify } = await loadJose();
  let header: ProtectedHeaderParameters;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return deny("malformed token");
  }
  const alg = header.alg;
  if (typeof alg !== "string" || alg.toLowerCase() === "none" || !ALLOWED_ALGORITHMS.has(alg)) {
    return deny("algorithm not allowed");
  }
  if (!(secret.algorithms as readonly string[]).includes(alg)) return deny("algorithm not allowed");

  let key: VerificationKey | Uint8Array;
  if (isHmacAlgorithm(alg as JwtAlgorithm)) {
    if (secret.sharedSecret === undefined) return deny("algorithm not allowed");
    key = new TextEncoder().encode(secret.sharedSecret);
  } else {
    if (secret.jwksUri === undefined) return deny("algorithm not allowed");
    const kid = typeof header.kid === "string" ? header.kid : undefined;
    const found = await (options.jwks ?? jwksCache).keyFor(
      credentialId,
      secret.jwksUri,
      { alg, ...(kid !== undefined ? { kid } : {}) },
      {
        failPolicy: secret.failPolicy ?? "fail-closed",
        ...(secret.jwksRefreshHint !== undefined ? { refreshHintSeconds: secret.jwksRefreshHint } : {}),
      },
    );
    if (found === "unreachable") return deny("jwks unreachable");
    if (found === undefined) return deny("no matching key");
    key = found;
  }

  let payload: JWTPayload;
  try {
    options.stats.verifications++;
    ({ payload } = await jwtVerify(token, key, {
      algorithms: secret.algorithms,
      issuer: secret.issuer,
      audience: secret.audience,
      clockTolerance: options.skew,
      currentDate: new Date(options.now),
      requiredClaims: ["exp"],
    }));
  } catch (error) {
    return deny(reasonOf(error));
  }
  if (!subjectMatches(secret.subject, payload.sub)) return deny("claim sub invalid");
  const claim = failingClaim(payload, secret.requiredClaims);
  if (claim !== undefined) return deny(`claim ${claim} invalid`);
  return { ok: true, payload };
}
