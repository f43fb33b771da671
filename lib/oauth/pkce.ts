/**
 * PKCE (RFC 7636) with S256 only, as OAuth 2.1 requires of public clients: the challenge is
 * BASE64URL(SHA-256(ASCII(code_verifier))), and a verifier is 43 to 128 unreserved characters.
 */
import { createHash, timingSafeEqual } from "node:crypto";

const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** A S256 challenge is the base64url (no padding) of 32 bytes: 43 characters. */
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export const isCodeVerifier = (value: string) => VERIFIER.test(value);
export const isS256Challenge = (value: string) => CHALLENGE.test(value);

export const s256Challenge = (verifier: string) =>
  createHash("sha256").update(verifier, "ascii").digest("base64url");

/** Whether `verifier` is well formed and hashes to `challenge` (compared in constant time). */
export function verifierMatches(verifier: string, challenge: string): boolean {
  if (!isCodeVerifier(verifier) || !isS256Challenge(challenge)) return false;
  const computed = Buffer.from(s256Challenge(verifier));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}
