/**
 * `limitBy` over a value the caller chooses limits nobody (an outside probe: 20 of 20 requests with
 * invented `x-customer-id` values passed a per-caller limit of 2). Every place an integrator or an
 * agent reads about `limitBy` says so and names the remedy: the create and update operations'
 * descriptions and the field's schema, as the OpenAPI document and the MCP tools derive them from
 * the registry. The behaviour itself: test/e2e/meters-data-plane.test.ts ("per-caller limits").
 */
import { describe, expect, it } from "vitest";
import { openApiDocument } from "#lib/api/openapi.ts";
import { OPERATIONS } from "#lib/api/registry.ts";
import { LIMIT_BY_WARNING } from "#lib/domain/meter-schema.ts";
import { ALL_TOOLS } from "#lib/mcp/toolsets.ts";

type Json = Record<string, unknown>;
const document = openApiDocument(OPERATIONS) as Json;
const operationOf = (id: string) =>
  Object.values(document.paths as Record<string, Record<string, Json>>)
    .flatMap((item) => Object.values(item))
    .find((candidate) => candidate.operationId === id)!;
/** Every `description` of `limitBy` properties anywhere in a JSON schema. */
function limitByDescriptions(schema: unknown, out: string[] = []): string[] {
  if (Array.isArray(schema)) for (const entry of schema) limitByDescriptions(entry, out);
  else if (schema && typeof schema === "object") {
    for (const [key, value] of Object.entries(schema)) {
      if (key === "limitBy") out.push(JSON.stringify(value));
      limitByDescriptions(value, out);
    }
  }
  return out;
}

describe("the limitBy warning", () => {
  it("names the escape and the remedies", () => {
    expect(LIMIT_BY_WARNING).toContain("cannot choose");
    expect(LIMIT_BY_WARNING).toContain("verified token");
    expect(LIMIT_BY_WARNING).toContain("`sub`");
    expect(LIMIT_BY_WARNING).toContain("every invented value gets a fresh count");
    expect(LIMIT_BY_WARNING).toContain("meter without `limitBy`");
  });

  it.each(["createMeter", "updateMeter"])(
    "is in the OpenAPI description of %s and of its body's limitBy",
    (id) => {
      const operation = operationOf(id);
      expect(operation.description).toContain(LIMIT_BY_WARNING);
      // The body's schema (its example carries a limitBy value, not a description).
      const body = limitByDescriptions(
        ((operation.requestBody as Json).content as Record<string, Json>)["application/json"]?.schema,
      );
      expect(body.length).toBeGreaterThan(0);
      for (const described of body) expect(described).toContain("cannot choose");
    },
  );

  it("is in the answered meter's limitBy schema", () => {
    const answered = limitByDescriptions((operationOf("getMeter").responses as Json)["200"]).concat(
      limitByDescriptions((document.components as Json | undefined) ?? {}),
    );
    expect(answered.some((described) => described.includes("cannot choose"))).toBe(true);
  });

  it.each(["create_meter", "update_meter"])(
    "is in the MCP tool %s: its description and its limitBy input",
    (name) => {
      const tool = ALL_TOOLS.find((candidate) => candidate.name === name)!;
      expect(tool.description).toContain(LIMIT_BY_WARNING);
      const inputs = limitByDescriptions(tool.inputSchema);
      expect(inputs.length).toBeGreaterThan(0);
      for (const described of inputs) expect(described).toContain("cannot choose");
    },
  );
});
