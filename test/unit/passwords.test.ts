/** Password hashing (lib/shared/passwords.ts): OWASP scrypt parameters, self-describing storage, constant-time compare. */
import * as crypto from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import {
  hashPassword,
  needsRehash,
  PASSWORD_KEY_BYTES,
  PASSWORD_SALT_BYTES,
  PASSWORD_SCRYPT,
  parsePasswordHash,
  verifyPassword,
} from "#lib/shared/passwords.ts";

vi.mock("node:crypto", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:crypto")>();
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) };
});

const PASSWORD = "correct horse battery staple";

describe("password hashing", () => {
  it("uses OWASP's scrypt parameters: N=2^17, r=8, p=1, a 32-byte salt and a 64-byte key", async () => {
    expect(PASSWORD_SCRYPT).toEqual({ N: 131072, r: 8, p: 1 });
    const stored = await hashPassword(PASSWORD);
    const parts = stored.split("$");
    expect(parts.slice(0, 4)).toEqual(["scrypt", "131072", "8", "1"]);
    expect(Buffer.from(parts[4] ?? "", "base64url")).toHaveLength(PASSWORD_SALT_BYTES);
    expect(Buffer.from(parts[5] ?? "", "base64url")).toHaveLength(PASSWORD_KEY_BYTES);
    // The key is scrypt's, with exactly those parameters.
    const parsed = parsePasswordHash(stored);
    if (!parsed) throw new Error("unparsed");
    const expected = crypto.scryptSync(PASSWORD, parsed.salt, 64, {
      N: 2 ** 17,
      r: 8,
      p: 1,
      maxmem: 256 * 1024 * 1024,
    });
    expect(parsed.key.equals(expected)).toBe(true);
  });

  it("verifies the right password and refuses a wrong one; two hashes of one password differ (random salt)", async () => {
    const [a, b] = await Promise.all([hashPassword(PASSWORD), hashPassword(PASSWORD)]);
    expect(a).not.toBe(b);
    expect(await verifyPassword(PASSWORD, a)).toBe(true);
    expect(await verifyPassword(PASSWORD, b)).toBe(true);
    expect(await verifyPassword(`${PASSWORD}!`, a)).toBe(false);
    expect(await verifyPassword("", a)).toBe(false);
  });

  it("compares the derived keys with timingSafeEqual, for a match and a mismatch", async () => {
    const stored = await hashPassword(PASSWORD);
    const spy = vi.mocked(crypto.timingSafeEqual);
    spy.mockClear();
    expect(await verifyPassword("wrong password!!", stored)).toBe(false);
    expect(await verifyPassword(PASSWORD, stored)).toBe(true);
    expect(spy).toHaveBeenCalledTimes(2);
    for (const [left, right] of spy.mock.calls) {
      expect(Buffer.isBuffer(left) && Buffer.isBuffer(right)).toBe(true);
      expect((left as Buffer).length).toBe(64);
      expect((right as Buffer).length).toBe(64);
    }
  });

  it("checks a hash with the parameters written in it, and says when to rehash", async () => {
    const cheap = await hashPassword(PASSWORD, { N: 2 ** 10, r: 8, p: 1 });
    expect(cheap.startsWith("scrypt$1024$8$1$")).toBe(true);
    expect(await verifyPassword(PASSWORD, cheap)).toBe(true);
    expect(await verifyPassword("another password", cheap)).toBe(false);
    expect(needsRehash(cheap)).toBe(true);
    expect(needsRehash(await hashPassword(PASSWORD))).toBe(false);
  });

  it("treats a malformed or over-costly stored value as a mismatch, not an error", async () => {
    const stored = await hashPassword(PASSWORD, { N: 2 ** 10, r: 8, p: 1 });
    const [, , , , salt, key] = stored.split("$");
    for (const bad of [
      "",
      "plain text",
      `bcrypt$1024$8$1$${salt}$${key}`,
      `scrypt$1000$8$1$${salt}$${key}`, // N not a power of two
      `scrypt$${2 ** 24}$8$1$${salt}$${key}`, // more work than any hash this service writes
      `scrypt$1024$8$1$$${key}`, // no salt
      `scrypt$1024$8$1$${salt}$`, // no key
    ]) {
      expect(parsePasswordHash(bad), bad).toBeUndefined();
      expect(await verifyPassword(PASSWORD, bad), bad).toBe(false);
    }
  });
});
