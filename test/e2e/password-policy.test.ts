/**
 * Common passwords are refused (docs/accounts.md "Password policy") over real HTTP
 * against the local stack: sign-up and reset answer 400 naming `password` and saying why, after
 * the length rule, and sign-up answers so for any address (no enumeration); nothing is written or
 * e-mailed, and a reset code stays usable for a better password.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findUserIdByEmail } from "#lib/domain/users.ts";
import { VALIDATION_MESSAGE } from "#lib/shared/errors.ts";
import { COMMON_PASSWORD_PROBLEM } from "#lib/shared/password-policy.ts";
import { newAccountHolder } from "../support/accounts.ts";
import { sentEmails } from "../support/emulator.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

const freshEmail = (label: string) => `${label}-${randomBytes(6).toString("hex")}@policy.example.test`;

async function post(path: string, body: unknown) {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

const REFUSED = {
  message: VALIDATION_MESSAGE,
  fields: ["password"],
  errors: [`password: ${COMMON_PASSWORD_PROBLEM}`],
};

describe("POST /auth/sign-up", () => {
  it.each(["password1234", "qwertyuiop12", "iloveyou1234"])(
    "refuses %j with 400 naming password; no user, no e-mail",
    async (password) => {
      const email = freshEmail("common");
      const answer = await post("/auth/sign-up", { email, password, firstName: "Ada", lastName: "Lovelace" });
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual(REFUSED);
      expect(await findUserIdByEmail(email)).toBeUndefined();
      expect(await sentEmails(email)).toEqual([]);
    },
  );

  it("refuses a password built from the address and names", async () => {
    const email = `grace.hopper-${randomBytes(4).toString("hex")}@policy.example.test`;
    const answer = await post("/auth/sign-up", {
      email,
      password: "gracehopper2024",
      firstName: "Grace",
      lastName: "Hopper",
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual(REFUSED);
  });

  it("answers the same for an address that has an account (the input alone decides)", async () => {
    const holder = await newAccountHolder("policy");
    const body = { password: "password1234", firstName: "Ada", lastName: "Lovelace" };
    const known = await post("/auth/sign-up", { ...body, email: holder.email });
    const unknown = await post("/auth/sign-up", { ...body, email: freshEmail("nobody") });
    expect(known).toEqual(unknown);
    expect(known.status).toBe(400);
  });

  it("keeps the length rule first", async () => {
    const answer = await post("/auth/sign-up", {
      email: freshEmail("short"),
      password: "password",
      firstName: "A",
      lastName: "B",
    });
    expect(answer.status).toBe(400);
    expect(answer.body.errors).toEqual(["password: must be at least 12 characters"]);
  });

  it("accepts a passphrase of unrelated words", async () => {
    const answer = await post("/auth/sign-up", {
      email: freshEmail("good"),
      password: "purple tractor mango lighthouse",
      firstName: "A",
      lastName: "B",
    });
    expect(answer.status).toBe(201);
  });
});

describe("POST /auth/reset-password", () => {
  it("refuses a common password with 400 naming password; the code then sets a good one", async () => {
    const holder = await newAccountHolder("reset");
    expect((await post("/auth/forgot-password", { email: holder.email })).status).toBe(200);
    const messages = (await sentEmails(holder.email)).filter((m) => m.subject === "Reset your password");
    const code = /code is (?:<strong>)?(\d{6})/.exec(messages.at(-1)?.body ?? "")?.[1];
    expect(code).toMatch(/^\d{6}$/);
    // The last one is built from the user's names (Ada Lovelace), checked once the code is known right.
    for (const password of ["password1234", "qwertyuiop12", "adalovelace2024"]) {
      const refused = await post("/auth/reset-password", { email: holder.email, code, password });
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual(REFUSED);
    }
    // The old password still works; the code was not spent.
    expect((await post("/auth/sign-in", { email: holder.email, password: holder.password })).status).toBe(
      200,
    );
    const reset = await post("/auth/reset-password", {
      email: holder.email,
      code,
      password: "seven lanterns over a quiet harbour",
    });
    expect(reset.status).toBe(200);
  });
});
