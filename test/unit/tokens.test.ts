/** User API token format, hashing and masking (spec 5.1); storage is an integration test. */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { generateToken, hashToken, listTokens, looksLikeToken, maskToken } from "#lib/domain/tokens.ts";

describe("generateToken", () => {
  it("is u- followed by 43 base64url characters (32 random bytes)", () => {
    const { raw } = generateToken();
    expect(raw).toMatch(/^u-[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(raw.slice(2), "base64url")).toHaveLength(32);
  });

  it("returns the SHA-256 hex of the raw token, its masked form and a token id", () => {
    const token = generateToken();
    expect(token.hash).toBe(createHash("sha256").update(token.raw).digest("hex"));
    expect(token.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(token.masked).toBe(maskToken(token.raw));
    expect(token.tokenId).toMatch(/^tok_[0-9a-f]{16}$/);
  });

  it("is different every time", () => {
    const tokens = Array.from({ length: 50 }, () => generateToken());
    expect(new Set(tokens.map((t) => t.raw)).size).toBe(50);
    expect(new Set(tokens.map((t) => t.tokenId)).size).toBe(50);
  });
});

describe("hashToken", () => {
  it("is the SHA-256 hex digest", () => {
    expect(hashToken("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });
});

describe("maskToken", () => {
  it("shows only the last four characters", () => {
    const { raw } = generateToken();
    const masked = maskToken(raw);
    expect(masked).toBe(`u-…${raw.slice(-4)}`);
    // Nothing of the secret part beyond the last four characters appears.
    expect(masked).not.toContain(raw.slice(2, 8));
    expect(masked.replace("u-…", "")).toHaveLength(4);
  });
});

describe("looksLikeToken", () => {
  it("accepts a generated token", () => {
    for (let i = 0; i < 20; i++) expect(looksLikeToken(generateToken().raw)).toBe(true);
  });

  it("rejects Bearer-prefixed, short, garbage and wrong-prefix values", () => {
    const { raw } = generateToken();
    for (const value of [
      `Bearer ${raw}`,
      ` ${raw}`,
      `${raw} `,
      raw.slice(0, 40),
      "u-",
      "",
      "u-short",
      `x-${raw.slice(2)}`,
      `U-${raw.slice(2)}`,
      `${raw.slice(0, 20)}+/${raw.slice(22)}`,
      `${raw}\n`,
      `u-${"a".repeat(129)}`,
      "'; DROP TABLE users; --",
    ]) {
      expect(looksLikeToken(value), value).toBe(false);
    }
  });
});

describe("listTokens", () => {
  it("lists id, name, masked form and creation time, oldest first, never the hash", () => {
    const list = listTokens({
      tok_b: { hash: "h2", masked: "u-…bbbb", createdAt: "2025-01-02T00:00:00.000Z", name: "ci" },
      tok_a: { hash: "h1", masked: "u-…aaaa", createdAt: "2025-01-01T00:00:00.000Z", name: "" },
    });
    expect(list).toEqual([
      { tokenId: "tok_a", name: "", masked: "u-…aaaa", createdAt: "2025-01-01T00:00:00.000Z" },
      { tokenId: "tok_b", name: "ci", masked: "u-…bbbb", createdAt: "2025-01-02T00:00:00.000Z" },
    ]);
    expect(listTokens(undefined)).toEqual([]);
  });
});
