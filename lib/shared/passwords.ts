/**
 * Password hashing (docs/accounts.md): scrypt from node:crypto with the parameters of OWASP's
 * password storage cheat sheet (N = 2^17, r = 8, p = 1), a 32-byte random salt and a 64-byte key.
 * The stored form describes itself, `scrypt$<N>$<r>$<p>$<salt base64url>$<hash base64url>`, so
 * the parameters can change later without breaking the passwords already stored: a hash is always
 * checked with the parameters written in it, and `needsRehash` says when to store a new one.
 * Comparison is in constant time (`timingSafeEqual`).
 */
import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from "node:crypto";

export interface ScryptParameters {
  /** CPU/memory cost, a power of two. */
  N: number;
  /** Block size. */
  r: number;
  /** Parallelism. */
  p: number;
}

/** OWASP password storage cheat sheet: scrypt with N = 2^17, r = 8, p = 1. */
export const PASSWORD_SCRYPT: Readonly<ScryptParameters> = { N: 2 ** 17, r: 8, p: 1 };
export const PASSWORD_SALT_BYTES = 32;
export const PASSWORD_KEY_BYTES = 64;

/** The length rule (in characters): defined with the rest of the new-password rule, which the console shares. */
export { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "./password-policy.ts";

/** Largest stored cost accepted when verifying (a stored hash is data: bound the work it can ask for). */
const MAX_N = 2 ** 20;
const MAX_R = 32;
const MAX_P = 16;

/** scrypt needs 128 * N * r * p bytes (plus a little); Node's default cap is 32 MiB, too low for N = 2^17. */
const memoryFor = ({ N, r, p }: ScryptParameters) => 128 * N * r * p + 2 * 1024 * 1024;

function derive(
  password: string,
  salt: Buffer,
  parameters: ScryptParameters,
  keyBytes: number,
): Promise<Buffer> {
  const options: ScryptOptions = { ...parameters, maxmem: memoryFor(parameters) };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize("NFKC"), salt, keyBytes, options, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

/** Hash a password for storage: `scrypt$N$r$p$salt$hash`, salt and hash base64url. */
export async function hashPassword(
  password: string,
  parameters: ScryptParameters = PASSWORD_SCRYPT,
): Promise<string> {
  const salt = randomBytes(PASSWORD_SALT_BYTES);
  const key = await derive(password, salt, parameters, PASSWORD_KEY_BYTES);
  const { N, r, p } = parameters;
  return ["scrypt", N, r, p, salt.toString("base64url"), key.toString("base64url")].join("$");
}

interface StoredHash extends ScryptParameters {
  salt: Buffer;
  key: Buffer;
}

const isPowerOfTwo = (n: number) => Number.isInteger(n) && n > 1 && (n & (n - 1)) === 0;

/** The parts of a stored hash, or undefined when it is not one this module wrote. */
export function parsePasswordHash(stored: string): StoredHash | undefined {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return undefined;
  const [N, r, p] = parts.slice(1, 4).map((part) => (/^\d{1,8}$/.test(part) ? Number(part) : Number.NaN));
  if (N === undefined || r === undefined || p === undefined) return undefined;
  if (!isPowerOfTwo(N) || N > MAX_N || !(r >= 1 && r <= MAX_R) || !(p >= 1 && p <= MAX_P)) return undefined;
  const salt = Buffer.from(parts[4] ?? "", "base64url");
  const key = Buffer.from(parts[5] ?? "", "base64url");
  if (salt.length < 16 || key.length < 32) return undefined;
  return { N, r, p, salt, key };
}

/**
 * Whether `password` is the one `stored` was made from, with the parameters written in it; the
 * keys are compared in constant time. A malformed stored value is a mismatch, never an error.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parsePasswordHash(stored);
  if (!parsed) return false;
  const key = await derive(password, parsed.salt, parsed, parsed.key.length);
  return timingSafeEqual(key, parsed.key);
}

/** Whether a stored hash was made with other parameters than today's (store a new one at the next sign-in). */
export function needsRehash(stored: string, parameters: ScryptParameters = PASSWORD_SCRYPT): boolean {
  const parsed = parsePasswordHash(stored);
  return (
    !parsed ||
    parsed.N !== parameters.N ||
    parsed.r !== parameters.r ||
    parsed.p !== parameters.p ||
    parsed.key.length !== PASSWORD_KEY_BYTES
  );
}

let dummy: Promise<string> | undefined;
/**
 * Spend the time of one verification when there is no stored hash (an unknown address), so the
 * answer's timing does not tell whether an account exists.
 */
export async function verifyAgainstNothing(password: string): Promise<false> {
  dummy ??= hashPassword("not a password of anyone");
  await verifyPassword(password, await dummy);
  return false;
}
