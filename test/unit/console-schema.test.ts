/**
 * The console's forms read the API's request schemas (console/src/schema.ts): the schema of an
 * operation, validation with the API's limits before sending, the body sent (empty optional fields
 * left out, a cleared nullable field sent as null), and oneOf branches told apart by a constant.
 */
import { describe, expect, it } from "vitest";
import {
  bodyOf,
  branchOf,
  discriminatorOf,
  humanise,
  type JsonSchema,
  requestSchema,
  unwrapNullable,
  validate,
} from "../../console/src/schema.ts";

const proxy = requestSchema("POST", "/api/clients/{clientId}/proxies");

describe("request schemas", () => {
  it("are the registry's: the proxy body has its required fields and limits", () => {
    expect(proxy.required).toEqual(expect.arrayContaining(["proxyName", "proxyTargetId"]));
    expect(proxy.properties?.proxyTimeoutSeconds).toMatchObject({ type: "integer", minimum: 1, maximum: 60 });
    expect(() => requestSchema("POST", "/api/nowhere")).toThrow(/no request schema/);
  });
});

describe("validate", () => {
  it("names each missing required field", () => {
    const errors = validate(proxy, {});
    for (const field of proxy.required ?? []) expect(errors[field]).toBe("is required");
  });

  it("applies lengths, integer bounds, patterns and enums", () => {
    const errors = validate(proxy, {
      proxyName: "x".repeat(129),
      proxyTimeoutSeconds: 61,
      proxyAlias: "Not An Alias",
      proxyDefaultRuleEffect: "maybe",
      proxyAdditionalHeaders: { "bad header": "v" },
    });
    expect(errors.proxyName).toBe("must be at most 128 characters");
    expect(errors.proxyTimeoutSeconds).toBe("must be at most 60");
    expect(errors.proxyAlias).toBe("has an invalid format");
    expect(errors.proxyDefaultRuleEffect).toMatch(/^must be one of allow, deny$/);
    expect(errors["proxyAdditionalHeaders.bad header"]).toMatch(/invalid format/);
  });

  it("accepts a valid body, and null where the schema allows it", () => {
    const body = {
      proxyName: "Weather",
      proxyProxyCredentialId: "c1",
      proxyTargetId: "t1",
      proxyTargetCredentialId: "c2",
      proxyRegion: "eu",
      proxyAlias: null,
      proxyTimeoutSeconds: 30,
    };
    expect(validate(proxy, body)).toEqual({});
    expect(validate(proxy, { ...body, proxyName: null })).toEqual({ proxyName: "is required" });
  });

  it("validates the items of arrays of objects by their index", () => {
    const schema: JsonSchema = {
      type: "object",
      properties: {
        rows: {
          type: "array",
          maxItems: 2,
          items: {
            type: "object",
            properties: { name: { type: "string", minLength: 1 } },
            required: ["name"],
          },
        },
      },
    };
    expect(validate(schema, { rows: [{ name: "a" }, {}] })).toEqual({ "rows.1.name": "is required" });
    expect(validate(schema, { rows: [{ name: "a" }, { name: "b" }, { name: "c" }] })).toEqual({
      rows: "takes at most 2",
    });
  });
});

describe("bodyOf", () => {
  it("leaves out empty optional fields, and sends null for a cleared nullable field that had a value", () => {
    const value = { proxyName: "Weather", notes: "", proxyAlias: "", proxyAdditionalHeaders: {} };
    expect(bodyOf(proxy, value)).toEqual({ proxyName: "Weather" });
    expect(bodyOf(proxy, value, { proxyAlias: "weather" })).toEqual({
      proxyName: "Weather",
      proxyAlias: null,
    });
  });
});

describe("oneOf", () => {
  const schema: JsonSchema = {
    type: "object",
    properties: { name: { type: "string" } },
    required: ["name"],
    oneOf: [
      {
        properties: { kind: { const: "a" }, alpha: { type: "string", minLength: 1 } },
        required: ["kind", "alpha"],
      },
      { properties: { kind: { enum: ["b"] }, beta: { type: "integer" } }, required: ["kind", "beta"] },
    ],
  };

  it("finds the property that tells the branches apart, and the branch a value chooses", () => {
    expect(discriminatorOf(schema)).toBe("kind");
    expect(Object.keys(branchOf(schema, { kind: "b" }).properties ?? {})).toEqual(["name", "kind", "beta"]);
    expect(branchOf(schema, { kind: "b" }).required).toEqual(["name", "kind", "beta"]);
  });

  it("validates against the chosen branch", () => {
    expect(validate(schema, { name: "n", kind: "a" })).toEqual({ alpha: "is required" });
    expect(validate(schema, { name: "n", kind: "b", beta: 1.5 })).toEqual({ beta: "must be a whole number" });
    expect(bodyOf(schema, { name: "n", kind: "b", beta: 2, alpha: "left over" })).toEqual({
      name: "n",
      kind: "b",
      beta: 2,
    });
  });
});

describe("names and nullables", () => {
  it("puts field names in words and unwraps anyOf [X, null]", () => {
    expect(humanise("proxyTimeoutSeconds")).toBe("Proxy timeout seconds");
    expect(humanise("limit_by")).toBe("Limit by");
    expect(unwrapNullable({ anyOf: [{ type: "string" }, { type: "null" }] })).toEqual({
      schema: { type: "string" },
      nullable: true,
    });
  });
});

describe("the deployment's regions (regionsOf, read by console/src/regions.ts)", () => {
  it("are read from the served document's region enums, and absent from a document without them", async () => {
    const { openApiDocument } = await import("#lib/api/openapi.ts");
    const { OPERATIONS } = await import("#lib/api/registry.ts");
    const { regionsOf } = await import("../../console/src/schema.ts");
    const regions = ["us-east-1", "eu-west-1", "ap-southeast-2"];
    expect(regionsOf(openApiDocument(OPERATIONS, { regions }))).toEqual(regions);
    expect(regionsOf(openApiDocument(OPERATIONS))).toBeUndefined();
  });
});
