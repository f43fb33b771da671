/** The spec's validation failure (400 "Input failed data validation") naming every failing field. */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { VALIDATION_MESSAGE } from "#lib/http/errors.ts";
import { CreateClientBody, CreateInviteBody, UpdateInviteBody, UpdateMemberBody } from "#lib/http/schemas.ts";
import { parseInput, queryBoolean, text } from "#lib/http/validation.ts";
import { errorOf } from "../support/errors.ts";

describe("parseInput", () => {
  it("returns the parsed (transformed) value on success", () => {
    expect(parseInput(CreateInviteBody, { email: "  Ann@Example.COM ", role: "user" })).toEqual({
      email: "ann@example.com",
      role: "user",
    });
    expect(parseInput(CreateClientBody, { clientName: "  Acme  " })).toEqual({ clientName: "Acme" });
  });

  it("throws the spec's 400 with the exact message", () => {
    const error = errorOf(() => parseInput(CreateClientBody, { clientName: "" }));
    expect(error.status).toBe(400);
    expect(error.expose).toBe(true);
    expect(error.message).toBe("Input failed data validation");
    expect(VALIDATION_MESSAGE).toBe("Input failed data validation");
    expect(error.body).toEqual({
      message: "Input failed data validation",
      fields: ["clientName"],
      errors: ["clientName: must not be empty"],
    });
  });

  it("names nested fields by their path, like roles.0", () => {
    const error = errorOf(() => parseInput(UpdateMemberBody, { roles: ["superuser", "admin", "root"] }));
    expect(error.body.fields).toEqual(["roles.0", "roles.2"]);
    expect((error.body.errors as string[]).every((e) => /^roles\.[02]: /.test(e))).toBe(true);

    const deep = z.object({ a: z.object({ b: z.array(z.object({ c: z.number() })) }) });
    expect(errorOf(() => parseInput(deep, { a: { b: [{ c: 1 }, { c: "x" }] } })).body.fields).toEqual([
      "a.b.1.c",
    ]);
  });

  it("names each unrecognized key", () => {
    const error = errorOf(() => parseInput(UpdateMemberBody, { roles: ["user"], foo: 1, bar: 2 }));
    expect(error.body.fields).toEqual(["foo", "bar"]);
    expect(error.body.errors).toEqual([
      "foo: is not a field that can be set here",
      "bar: is not a field that can be set here",
    ]);

    const nested = z.object({ inner: z.object({ a: z.string() }).strict() });
    expect(errorOf(() => parseInput(nested, { inner: { a: "x", extra: true } })).body.fields).toEqual([
      "inner.extra",
    ]);
  });

  it("names root-level problems `body`, or the given root", () => {
    expect(errorOf(() => parseInput(UpdateMemberBody, "not an object")).body.fields).toEqual(["body"]);
    expect(errorOf(() => parseInput(UpdateMemberBody, undefined)).body.fields).toEqual(["body"]);
    // A refinement of the whole object has an empty path too.
    const refined = errorOf(() => parseInput(UpdateInviteBody, {}));
    expect(refined.body.fields).toEqual(["body"]);
    expect(refined.body.errors).toEqual(["body: roles or resend: true is required"]);
    expect(errorOf(() => parseInput(z.string(), 5, "query")).body.fields).toEqual(["query"]);
  });

  it("lists each field once even with several problems, but every problem", () => {
    const schema = z.object({
      name: z
        .string()
        .min(5)
        .regex(/^[a-z]+$/),
    });
    const error = errorOf(() => parseInput(schema, { name: "A1" }));
    expect(error.body.fields).toEqual(["name"]);
    expect(error.body.errors).toHaveLength(2);
  });

  it("reports a missing required field by name", () => {
    expect(errorOf(() => parseInput(CreateInviteBody, { role: "user" })).body.fields).toEqual(["email"]);
  });
});

describe("text and queryBoolean", () => {
  it("trims and bounds text", () => {
    expect(text(5).parse("  abc ")).toBe("abc");
    expect(text(5).safeParse("   ").success).toBe(false);
    expect(text(5).safeParse("abcdef").success).toBe(false);
  });

  it("accepts true/false in the usual cases only", () => {
    expect(queryBoolean.parse("TRUE")).toBe(true);
    expect(queryBoolean.parse("False")).toBe(false);
    expect(queryBoolean.safeParse("yes").success).toBe(false);
    expect(queryBoolean.safeParse("1").success).toBe(false);
  });
});
