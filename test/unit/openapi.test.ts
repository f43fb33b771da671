/**
 * The OpenAPI 3.1 document derived from the registry (lib/api/openapi.ts): it validates with a
 * maintained validator (@readme/openapi-parser: the OpenAPI 3.1 schema plus the checks a schema
 * cannot make, such as unique operation ids and declared path parameters), and every registry
 * operation is in it with its id, tag, security, parameters, body and answers. Schemas zod cannot
 * express in JSON Schema (transforms, dates, refinements, recursion) never break the document.
 */
import { compileErrors, validate } from "@readme/openapi-parser";
// ajv (2020-12, OpenAPI 3.1's dialect) is what the validator above is built on: it checks the examples.
import { Ajv2020 } from "ajv/dist/2020.js";
import formatsPlugin from "ajv-formats";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  AUTHENTICATED_ERRORS,
  COOKIE_SECURITY_SCHEME,
  openApiDocument,
  REGION_FIELDS,
  SECURITY_SCHEME,
} from "#lib/api/openapi.ts";
import { access, MessageResponse, type Operation, operation, pathParams } from "#lib/api/operation.ts";
import { OPERATIONS } from "#lib/api/registry.ts";
import { getConfig } from "#lib/config.ts";
import { AUTH_TYPE_USAGE, AUTH_TYPES } from "#lib/shared/auth-types.ts";
import { RULE_METHODS } from "#lib/shared/rule-constants.ts";
import { TELEMETRY_INTERVALS } from "#lib/shared/telemetry/buckets.ts";
import { SECRET_SCHEMAS } from "#lib/vault/secret-schemas.ts";
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
  // As served (lib/api/operations/docs.ts): with the deployment's regions.
  const document = openApiDocument(OPERATIONS, { regions: getConfig().regions }) as Json;

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

describe("what the console's forms need (issue 23)", () => {
  const regions = getConfig().regions;
  const document = openApiDocument(OPERATIONS, { regions }) as Json;
  const operations = OPERATIONS.map((op) => [op.id, op, operationIn(document, op)] as const);

  /** Every schema node under `root` with the path leading to it (`$ref`s followed once each). */
  function nodes(root: unknown, at: string, seen = new Set<string>()): [string, Json][] {
    if (!root || typeof root !== "object") return [];
    const node = root as Json;
    if (typeof node.$ref === "string") {
      if (seen.has(node.$ref)) return [];
      return nodes(
        resolve(document, node),
        `${at}->${node.$ref.split("/").pop()}`,
        new Set([...seen, node.$ref]),
      );
    }
    const found: [string, Json][] = [[at, node]];
    for (const [name, inner] of Object.entries((node.properties ?? {}) as Record<string, Json>))
      found.push(...nodes(inner, `${at}.${name}`, seen));
    if (node.items) found.push(...nodes(node.items, `${at}[]`, seen));
    if (node.additionalProperties && typeof node.additionalProperties === "object")
      found.push(...nodes(node.additionalProperties, `${at}{*}`, seen));
    for (const key of ["oneOf", "anyOf", "allOf"])
      for (const [index, branch] of ((node[key] ?? []) as Json[]).entries())
        found.push(...nodes(branch, `${at}|${index}`, seen));
    return found;
  }
  const isEmpty = (schema: Json) =>
    Object.keys(schema).every((key) => key === "description" || key === "title");
  const bodyOf = (declared: Json) => declared.requestBody?.content["application/json"];
  const successOf = (op: Operation, declared: Json) =>
    declared.responses[String(op.response.status)].content?.["application/json"];

  /** Free-form values on purpose, each with its reason. */
  const FREE_FORM = new Map<string, string>([
    ["createProxy:body.proxyAdditionalData{*}", "the caller's own data, passed to its transforms as it is"],
    ["updateProxy:body.proxyAdditionalData{*}", "the caller's own data, passed to its transforms as it is"],
    ["testCredential:body.body", "the request body to send to the target: any JSON"],
    ["registerPasskey:body.response.clientExtensionResults{*}", "the browser's WebAuthn extension outputs"],
    ["signInWithPasskey:body.response.clientExtensionResults{*}", "the browser's WebAuthn extension outputs"],
  ]);

  it("no create or update body, nor any property of one, is the empty schema (bar the listed free-form ones)", () => {
    const empty: string[] = [];
    for (const [id, op, declared] of operations) {
      if (!["POST", "PUT", "PATCH"].includes(op.method) || !bodyOf(declared)) continue;
      for (const [at, schema] of nodes(bodyOf(declared).schema, `${id}:body`))
        if (isEmpty(schema)) empty.push(at);
    }
    expect(empty.sort()).toEqual([...FREE_FORM.keys()].sort());
  });

  it("the credential's creation body is one branch per auth type, with its secret's schema and credential types", () => {
    const op = OPERATIONS.find((candidate) => candidate.id === "createCredential") as Operation;
    const schema = bodyOf(operationIn(document, op)).schema;
    expect(schema.discriminator).toEqual({ propertyName: "authType" });
    expect(schema.oneOf.map((branch: Json) => branch.properties.authType.const)).toEqual([...AUTH_TYPES]);
    for (const branch of schema.oneOf as Json[]) {
      const authType = branch.properties.authType.const as keyof typeof SECRET_SCHEMAS;
      expect(branch.properties.credentialType.enum).toEqual([...AUTH_TYPE_USAGE[authType]]);
      // The vault's schema of that secret (its shared parts hoisted into components).
      const secret = z.toJSONSchema(SECRET_SCHEMAS[authType], {
        io: "input",
        unrepresentable: "any",
      }) as Json;
      expect(Object.keys(branch.properties.secret.properties), authType).toEqual(
        Object.keys(secret.properties),
      );
      expect(branch.properties.secret.required, authType).toEqual(secret.required);
      expect(branch.properties.secret.additionalProperties, authType).toBe(false);
      expect(branch.properties.region.enum).toEqual(regions);
      expect(branch.required).toEqual(
        expect.arrayContaining(["credentialName", "authType", "region", "secret"]),
      );
    }
    // Documentation only: the server's own checks (and messages) stay CreateCredentialBody's and the vault's.
    expect(
      op.body?.safeParse({
        credentialName: "x",
        credentialType: "proxy",
        authType: "nope",
        region: "r",
        secret: 1,
      }).success,
    ).toBe(true);
  });

  /** Fields whose values are a closed set: an enum (or a constant) wherever they are in the document. */
  const ENUM_FIELDS: Record<string, readonly string[] | undefined> = {
    ...Object.fromEntries(REGION_FIELDS.map((name) => [name, regions])),
    authType: AUTH_TYPES,
    credentialAuthType: AUTH_TYPES,
    credentialType: ["proxy", "target"],
    effect: undefined, // allow/deny on rules, include/exclude on meters
    credentialDefaultRuleEffect: ["allow", "deny"],
    targetDefaultRuleEffect: ["allow", "deny"],
    proxyDefaultRuleEffect: ["allow", "deny"],
    methods: RULE_METHODS,
    meterType: undefined,
    meterMode: undefined,
    transformMode: undefined,
    window: TELEMETRY_INTERVALS,
    cadence: TELEMETRY_INTERVALS,
    interval: TELEMETRY_INTERVALS,
    role: undefined,
    roles: undefined,
    clientStatus: undefined,
    billingType: undefined,
    billingStatus: undefined,
    planStatus: undefined,
    planTier: undefined,
    topUpMethod: undefined,
    location: undefined,
    presence: undefined,
    notifyTrigger: undefined,
    operator: undefined,
  };
  /** Fields whose names look like a closed set's but are deliberately open, each with its reason. */
  const TYPE_REASON =
    "a passkey descriptor's `public-key`: @simplewebauthn's types (and browsers) carry it as a string";
  const OPEN_FIELDS = new Map<string, string>([
    ["listRequestLogs:answer.requests[].proxyData|0.method", "the method the caller sent, whatever it is"],
    ["testCredential:answer.tests[].request.method", "the method the credential test sent"],
    ["passkeyAuthenticationOptions:answer.options.allowCredentials[].type", TYPE_REASON],
    ["passkeyRegistrationOptions:answer.options.excludeCredentials[].type", TYPE_REASON],
  ]);
  const ENUM_LIKE =
    /(Type|type|Status|status|Role|role|roles|Effect|effect|Mode|mode|Region|region|Window|window|[Ii]nterval|Interval|location|Location|[Mm]ethods?|[Cc]adence|Trigger|Tier|operator|[Pp]resence|source|Access)$/;

  it("every closed set is an enum, each listing the values validation accepts", () => {
    const free: string[] = [];
    const open = new Set<string>();
    for (const [id, , declared] of operations) {
      const roots: [string, unknown][] = [
        [`${id}:body`, bodyOf(declared)?.schema],
        [
          `${id}:answer`,
          (Object.values((declared.responses["200"] ?? declared.responses["201"])?.content ?? {})[0] as Json)
            ?.schema,
        ],
        ...((declared.parameters ?? []) as Json[]).map((p): [string, unknown] => [
          `${id}:query`,
          { properties: { [p.name]: p.schema } },
        ]),
      ];
      for (const [where, root] of roots) {
        for (const [at, schema] of nodes(root, where)) {
          const name = at
            .replace(/(\[\]|\{\*\}|\|\d+|->\w+)+$/, "")
            .split(".")
            .pop() as string;
          // An array's items are visited as their own node, under the array's name.
          const target = schema;
          if (target.type !== "string") continue;
          if (!(name in ENUM_FIELDS) && !ENUM_LIKE.test(name)) continue;
          const values = target.enum ?? ("const" in target ? [target.const] : undefined);
          if (!values) {
            if (!OPEN_FIELDS.has(at)) free.push(at);
            else open.add(at);
            continue;
          }
          // An enum lists the whole set; in one branch of a body's oneOf (a credential's auth
          // type), the values of that branch.
          const expected = ENUM_FIELDS[name];
          if (expected && target.enum && !at.includes(":body|")) expect(values, at).toEqual([...expected]);
          if (expected) expect(expected, at).toEqual(expect.arrayContaining(values));
        }
      }
    }
    expect(free).toEqual([]);
    // Each listed exception still exists (and is still open): the list cannot go stale.
    expect([...open].sort()).toEqual([...OPEN_FIELDS.keys()].sort());
  });

  it("query parameters are typed: pages and limits integers with bounds, dates date-time, booleans, enums", () => {
    for (const [id, , declared] of operations) {
      for (const parameter of ((declared.parameters ?? []) as Json[]).filter((p) => p.in === "query")) {
        const { name, schema } = parameter;
        const at = `${id} ${name}`;
        if (name === "page" || name === "limit") {
          expect(schema.type, at).toBe("integer");
          expect(schema.minimum, at).toBe(1);
          expect(schema.maximum, at).toEqual(expect.any(Number));
        }
        if (/Date$|^processed(After|Before)$/.test(name)) expect(schema.format, at).toBe("date-time");
        if (/^(immediatelyDelete|includeTemporary)$/.test(name)) expect(schema.type, at).toBe("boolean");
        if (name === "interval") expect(schema.enum, at).toEqual([...TELEMETRY_INTERVALS]);
      }
    }
  });

  const ajv = new Ajv2020({ strict: false, allErrors: true });
  // CommonJS `exports.default` under ESM: the plugin is the default export's default.
  const addFormats = ((formatsPlugin as unknown as { default?: unknown }).default ?? formatsPlugin) as (
    instance: Ajv2020,
  ) => void;
  addFormats(ajv);
  const check = (schema: Json, value: unknown) => {
    const validateExample = ajv.compile({ ...schema, components: document.components });
    return validateExample(value)
      ? []
      : (validateExample.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
  };

  it("the examples' checker refuses what its schema refuses (formats included)", () => {
    expect(check({ type: "string", format: "date-time" }, "yesterday")).not.toEqual([]);
    expect(check({ $ref: "#/components/schemas/Error" }, { fields: [] })).not.toEqual([]);
    expect(check({ $ref: "#/components/schemas/Error" }, { message: "Not found" })).toEqual([]);
  });

  it.each(operations)(
    "%s: its body and answers have examples, each valid against its schema",
    (_, op, declared) => {
      const body = bodyOf(declared);
      if (body) {
        expect(body.example, "body example").toBeDefined();
        expect(check(body.schema, body.example), "body example").toEqual([]);
        // and the server accepts it as far as its schema goes (a 400 would not be a good example)
        const parsed = op.body?.safeParse(body.example);
        expect(parsed?.success, JSON.stringify(parsed?.error?.issues)).toBe(true);
      }
      for (const [status, response] of Object.entries(declared.responses as Record<string, Json>)) {
        const media = response.content?.["application/json"];
        if (!media) continue;
        expect(media.example, `${status} example`).toBeDefined();
        expect(check(media.schema, media.example), `${status} example`).toEqual([]);
      }
      const success = successOf(op, declared);
      if (success)
        expect(op.response.schema.safeParse(success.example).success, "the answer's schema accepts it").toBe(
          true,
        );
    },
  );
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
