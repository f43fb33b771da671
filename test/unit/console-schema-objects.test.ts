/**
 * The console's forms (console/src/schema.ts) with an object field given empty: a required secret
 * with no fields (auth type `none`) is present and sent as `{}`, so the API's own checks decide it;
 * an empty optional object is still left out; an empty required string still "is required".
 */
import { describe, expect, it } from "vitest";
import { bodyOf, type JsonSchema, validate } from "../../console/src/schema.ts";

const credential: JsonSchema = {
  type: "object",
  properties: { credentialName: { type: "string", minLength: 1 }, secret: {}, notes: { type: "object" } },
  required: ["credentialName", "secret"],
};

describe("an object field given empty", () => {
  it("is present when required, and sent as {}", () => {
    const value = { credentialName: "open", secret: {}, notes: {} };
    expect(validate(credential, value)).toEqual({});
    expect(bodyOf(credential, value)).toEqual({ credentialName: "open", secret: {} });
  });

  it("is still missing when not given at all, as an empty required string is", () => {
    expect(validate(credential, { credentialName: "" })).toEqual({
      credentialName: "is required",
      secret: "is required",
    });
  });

  it("keeps its nested checks when its schema has required fields", () => {
    const schema: JsonSchema = {
      type: "object",
      properties: {
        secret: { type: "object", properties: { token: { type: "string" } }, required: ["token"] },
      },
      required: ["secret"],
    };
    expect(validate(schema, { secret: {} })).toEqual({ "secret.token": "is required" });
  });
});
