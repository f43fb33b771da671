/**
 * The rule for new passwords (docs/accounts.md "Password policy"): zxcvbn-ts with the
 * common-password dictionary refuses well-known passwords of the right length, and ones built from
 * the person's own address or names, and accepts passphrases of unrelated words.
 */
import { describe, expect, it } from "vitest";
import { COMMON_PASSWORD_PROBLEM, MIN_PASSWORD_SCORE, passwordProblem } from "#lib/shared/password-policy.ts";

const PERSON = ["ada.lovelace@example.org", "Ada", "Lovelace"];

describe("passwordProblem", () => {
  it.each(["password1234", "qwertyuiop12", "iloveyou1234", "Password1234", "123456789012", "aaaaaaaaaaaa"])(
    "refuses the common or patterned %j",
    async (password) => {
      expect(await passwordProblem(password)).toBe(COMMON_PASSWORD_PROBLEM);
    },
  );

  it.each(["ada.lovelace@example.org", "lovelace1234!", "adalovelace12", "AdaLovelace2024"])(
    "refuses %j, built from the person's own address and names",
    async (password) => {
      expect(await passwordProblem(password, PERSON)).toBe(COMMON_PASSWORD_PROBLEM);
    },
  );

  it("refuses the names written together, whatever the address", async () => {
    expect(await passwordProblem("gracehopper2024", ["g-1a2b@example.org", "Grace", "Hopper"])).toBe(
      COMMON_PASSWORD_PROBLEM,
    );
  });

  it("judges the user's inputs, not the password alone: the same one passes for another person", async () => {
    expect(
      await passwordProblem("adalovelace12", ["someone@else.example", "Grace", "Hopper"]),
    ).toBeUndefined();
    expect(await passwordProblem("adalovelace12", PERSON)).toBe(COMMON_PASSWORD_PROBLEM);
  });

  it.each([
    "correct horse battery staple",
    "purple-tractor-mango-lighthouse",
    "a new and longer passphrase",
    "Gq7#vR2!pL9zXw",
  ])("accepts %j", async (password) => {
    expect(await passwordProblem(password, PERSON)).toBeUndefined();
  });

  it("judges a very long password by its first 100 characters, and accepts a strong one", async () => {
    expect(await passwordProblem(`correct horse battery staple ${"x".repeat(200)}`, PERSON)).toBeUndefined();
  });

  it("asks for zxcvbn's score 3 (safely unguessable)", () => {
    expect(MIN_PASSWORD_SCORE).toBe(3);
    expect(COMMON_PASSWORD_PROBLEM).toMatch(/^this password is too common/);
  });
});
