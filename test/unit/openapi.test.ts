/**
 * The OpenAPI 3.1 document derived from the registry (lib/api/openapi.ts): it validates with a
 * maintained validator (@readme/openapi-parser: the OpenAPI 3.1 schema plus the checks a schema
 * cannot make, such as unique operation ids and declared path parameters), and every registry
 * operation is in it with its id, tag, security, parameters, body and answers. Schemas zod cannot
 * express in JSON Schema (transforms, dates, refinements, recursion) never break the document.
 */
import { compileErrors, validate } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  AUTHENTICATED_ERRORS,
  COOKIE_SECURITY_SCHEME,
  openApiDocument,
  SECURITY_SCHEME,
} from "#lib/api/openapi.ts";
import { access, MessageResponse, type Operation, operation, pathParams } from "#lib/api/operation.ts";
import { OPERATIONS } from "#lib/api/registry.ts";
import packageJson from "../../package.json" with { type: "json" };

type Json = Record<string, any>;

async function expectValid(document: Json) {
  const result = await validate(structuredClone(document) as never);
  expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
}

const operationIn = (document: Json, op: Operation): Json =>
  document.paths?.[op.path]?.[op.method.toLowerCase()];

/** Follows a local `$ref` (`#/components/...`) to what it names. */
function resolve(document: Json, value: Json): Json {
  if (typeof value?.$ref !== "string") return value;
  return (value.$ref as string)
    .slice(2)
    .split("/")
    .reduce((node: Json, key) => node?.[key], document);
}

describe("the registry's OpenAPI document", () => {
  const document = openApiDocument(OPERATIONS) as Json;

  it("validates as OpenAPI 3.1", async () => {
    expect(document.openapi).toMatch(/^3\.1\./);
    await expectValid(document);
  });

  it("is titled, versioned from package.json, with a relative server", () => {
    expect(document.info.title).toEqual(expect.any(String));
    expect(document.info.version).toBe(packageJson.version);
    expect(document.servers).toHaveLength(1);
    expect(document.servers[0].url).not.toMatch(/^[a-z]+:/);
  });

  it("carries spec 5.1's scheme: the raw token in the Authorization header", () => {
    expect(document.components.securitySchemes[SECURITY_SCHEME]).toMatchObject({
      type: "apiKey",
      in: "header",
      name: "Authorization",
    });
    expect(document.components.securitySchemes[SECURITY_SCHEME].description).toMatch(
      /POST \/api\/users\/\{userId\}\/tokens.*npm run admin/,
    );
  });

  it("carries the session cookie's scheme (issue 21), with its https name and the CSRF Origin rule", () => {
    const scheme = document.components.securitySchemes[COOKIE_SECURITY_SCHEME];
    expect(scheme).toMatchObject({ type: "apiKey", in: "cookie", name: "session" });
    expect(scheme.description).toMatch(/__Host-session/);
    expect(scheme.description).toMatch(/Origin/);
  });

  it("holds exactly the registry's operations, ids unique", () => {
    const inDocument = Object.entries(document.paths as Record<string, Json>).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(inDocument.sort()).toEqual(OPERATIONS.map((op) => `${op.method} ${op.path}`).sort());
    const ids = OPERATIONS.map((op) => op.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it.each(OPERATIONS.map((op) => [op.id, op] as const))("%s: id, words, tag, access", (_, op) => {
    const declared = operationIn(document, op);
    expect(declared).toBeDefined();
    expect(declared.operationId).toBe(op.id);
    expect(declared.summary).toBe(op.summary);
    expect(declared.description).toContain(op.description);
    expect(declared.tags).toEqual([op.group]);
    expect(declared["x-effect"]).toBe(op.effect);
    expect(declared["x-access"]).toEqual(op.access);
    expect(declared.security).toEqual(
      op.access.kind === "public" ? [] : [{ [SECURITY_SCHEME]: [] }, { [COOKIE_SECURITY_SCHEME]: [] }],
    );
  });

  it.each(OPERATIONS.map((op) => [op.id, op] as const))("%s: parameters and body", (_, op) => {
    const declared = operationIn(document, op);
    const parameters = (declared.parameters ?? []) as Json[];
    const pathNames = [...op.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
    expect(parameters.filter((p) => p.in === "path").map((p) => p.name)).toEqual(pathNames);
    for (const p of parameters.filter((p) => p.in === "path")) expect(p.required).toBe(true);
    const queryNames = Object.keys((op.query as unknown as z.ZodObject).shape ?? {});
    expect(
      parameters
        .filter((p) => p.in === "query")
        .map((p) => p.name)
        .sort(),
    ).toEqual(queryNames.sort());
    if (op.body) {
      expect(declared.requestBody.content["application/json"].schema).toEqual(expect.any(Object));
    } else {
      expect(declared.requestBody).toBeUndefined();
    }
  });

  it.each(OPERATIONS.map((op) => [op.id, op] as const))("%s: success and error answers", (_, op) => {
    const responses = operationIn(document, op).responses as Record<string, Json>;
    const success = responses[String(op.response.status)];
    const contentType = op.response.contentType ?? "application/json";
    // the declared type, then the alternatives chosen by Accept (the usage report's CSV)
    expect(Object.keys(success?.content ?? {})).toEqual([
      contentType,
      ...(op.response.alternatives ?? []).map((alternative) => alternative.contentType),
    ]);
    const expectedErrors = new Set([
      ...op.errors,
      ...(op.access.kind === "public" ? [] : AUTHENTICATED_ERRORS),
    ]);
    for (const status of expectedErrors) {
      const answer = responses[String(status)];
      expect(answer, `${op.id} ${status}`).toBeDefined();
      const schema = resolve(document, answer?.content["application/json"].schema);
      expect(schema.properties).toHaveProperty("message");
      expect(schema.required).toEqual(["message"]);
    }
  });

  it("describes a JSON answer with the fields its schema declares (listProxies)", () => {
    const op = OPERATIONS.find((candidate) => candidate.id === "listProxies");
    expect(op, "listProxies is in the registry").toBeDefined();
    const schema = operationIn(document, op as Operation).responses["200"].content["application/json"].schema;
    expect(schema.properties).toHaveProperty("message");
    expect(schema.properties).toHaveProperty("proxies");
    expect(schema.properties).toHaveProperty("pagination");
  });

  it("serves the documentation itself without a token", () => {
    const docs = OPERATIONS.filter((op) => op.group === "docs");
    expect(docs.map((op) => `${op.method} ${op.path}`).sort()).toEqual(["GET /docs", "GET /openapi.json"]);
    for (const op of docs) expect(op.access.kind).toBe("public");
    expect(
      operationIn(document, docs.find((op) => op.path === "/docs") as Operation).responses["200"].content,
    ).toHaveProperty("text/html; charset=utf-8");
  });
});

describe("schemas JSON Schema cannot express", () => {
  interface Node {
    name: string;
    children: Node[];
  }
  const Tree: z.ZodType<Node> = z.object({
    name: z.string(),
    get children() {
      return z.array(Tree);
    },
  });
  const Shared = z.object({ label: z.string() }).meta({ id: "SharedLabel" });
  const odd = operation({
    id: "oddThing",
    method: "PUT",
    path: "/api/things/{thingId}",
    group: "proxies",
    summary: "Update an odd thing",
    description: "Uses every kind of schema that has no JSON Schema form.",
    access: access.user,
    effect: "write",
    params: pathParams("thingId"),
    query: z.object({ when: z.string().transform((value) => new Date(value)) }),
    body: z
      .object({
        name: z.string().transform((value) => value.length),
        at: z.date().optional(),
        tree: Tree,
        shared: Shared,
        again: Shared,
      })
      .refine((value) => value.name > 0, "name must not be empty"),
    response: {
      status: 200,
      schema: MessageResponse.extend({
        parsed: z.string().transform((value) => Number(value)),
        at: z.date(),
        tree: Tree,
        custom: z.custom<string>((value) => typeof value === "string"),
        shared: Shared,
      }),
    },
    errors: [404],
    // Only documented here, never called.
    handler: async () => {
      throw new Error("not called");
    },
  });
  const other = operation({
    id: "otherThing",
    method: "GET",
    path: "/api/things/{thingId}",
    group: "proxies",
    summary: "Get an odd thing",
    description: "Another tree in another operation.",
    access: access.client("reader"),
    effect: "read",
    params: pathParams("thingId"),
    response: { status: 200, schema: MessageResponse.extend({ tree: Tree, shared: Shared }) },
    // Only documented here, never called.
    handler: async () => {
      throw new Error("not called");
    },
  });

  it("never throws, and the document still validates with every $ref resolving", async () => {
    const document = openApiDocument([odd, other]) as Json;
    await expectValid(document);
    // Recursion and named (`meta({id})`) schemas become components, referred to by $ref.
    expect(Object.keys(document.components.schemas)).toContain("SharedLabel");
    const tree =
      document.paths["/api/things/{thingId}"].get.responses["200"].content["application/json"].schema
        .properties.tree;
    expect(resolve(document, tree).properties.children.items.$ref).toMatch(/^#\/components\/schemas\//);
    const refs = JSON.stringify(document).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of refs) {
      const target = ref.slice('"$ref":"'.length, -1);
      expect(target, target).toMatch(/^#\/components\/schemas\//);
      expect(resolve(document, { $ref: target }), target).toEqual(expect.any(Object));
    }
  });

  it("describes requests as sent (input) and answers as they leave (output)", () => {
    const document = openApiDocument([odd]) as Json;
    const declared = document.paths["/api/things/{thingId}"].put;
    const body = declared.requestBody.content["application/json"].schema;
    expect(body.properties.name).toEqual({ type: "string" });
    expect(declared.requestBody.required).toBe(true);
    expect(declared.parameters.find((p: Json) => p.name === "when")).toMatchObject({
      in: "query",
      required: true,
      schema: { type: "string" },
    });
    const answer = declared.responses["200"].content["application/json"].schema;
    expect(answer.properties.message).toEqual({ type: "string" });
    // A transform's output and a date have no JSON Schema type: any value, said so.
    expect(answer.properties.parsed.type).toBeUndefined();
    expect(answer.properties.at.description).toMatch(/cannot be expressed/);
    expect(declared.responses).toHaveProperty("404");
  });
});
