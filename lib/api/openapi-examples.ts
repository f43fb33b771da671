/**
 * Examples for the OpenAPI document (issue 23): a small generator that walks a JSON Schema and
 * builds a value that satisfies it, choosing realistic values by format and by property name (ids,
 * e-mails, URLs, dates, names). Only the documentation loads this module (lib/api/openapi.ts); an
 * operation whose generated example would be wrong or unrealistic declares its own
 * (`Operation.examples`). test/unit/openapi.test.ts checks every example against its schema.
 */

type Json = Record<string, unknown>;

/** A fixed instant, so the document is the same on every build. */
const WHEN = "2026-01-15T09:30:00.000Z";

/** Values by property name, for plain strings (no format, enum or pattern deciding it). */
const BY_NAME: readonly [RegExp, string][] = [
  [/^(userEmail|email|.*Email)$/, "ada@example.com"],
  [/^(region|[a-z]+Region|regionAcces)$/, "eu-west-1"],
  [/^(pKey)$/, "8f14e45f-ceea-4f6a-9c2b-5d1e2a3b4c5d"],
  [/^(sKey)$/, "0c9a7e2b-4d1f-4b8e-a6c3-2f5e8d7b9a10"],
  [/^clientId$/, "8f14e45f-ceea-4f6a-9c2b-5d1e2a3b4c5d"],
  [/^userId$/, "3d6f0a2e-7b1c-4e9d-8a5f-1c2b3d4e5f60"],
  [/^(credentialId|proxyProxyCredentialId|proxyTargetCredentialId)$/, "0c9a7e2b-4d1f-4b8e-a6c3-2f5e8d7b9a10"],
  [/^(targetId|proxyTargetId)$/, "5b2e9c1d-3a4f-4d6e-b7c8-9d0e1f2a3b4c"],
  [/^proxyId$/, "7a1c3e5f-2b4d-4c6e-8f0a-1b3c5d7e9f20"],
  [/Id$/, "2e4c6a8b-1d3f-4a5c-9e7b-0f2d4b6a8c1e"],
  [/(URL|Url|url|Uri|uri)$/, "https://api.example.com/v1"],
  [/^(clientName)$/, "Acme Corp"],
  [/^(mspName)$/, "Northwind Managed Services"],
  [/^(credentialName)$/, "Production API key"],
  [/^(targetName)$/, "Payments API"],
  [/^(proxyName)$/, "Payments proxy"],
  [/^(proxyAlias)$/, "payments"],
  [/^(tokenName)$/, "CI deploy token"],
  [/^(userFirstName|firstName)$/, "Ada"],
  [/^(userLastName|lastName)$/, "Lovelace"],
  [/^(userUsername|username)$/, "ada"],
  [/^(userPhone|phone)$/, "+44 20 7946 0958"],
  [/^(userBio)$/, "Platform engineer"],
  [/^notes$/, "Managed by the platform team"],
  [/^(password|currentPassword|newPassword)$/, "correct-horse-battery-staple"],
  [/^recoveryToken$/, "7Jq2cXKfV0m9bT3wR8yN1pL5sD4gH6kA2eZ0uI9oQ7c"],
  [/^(title)$/, "Usage alert"],
  [/^message$/, "Done"],
  [/^(code)$/, "123456"],
  [/^regexFlags$/, "i"],
  [/^ip(Allow|Deny)$/, "203.0.113.0/24"],
  [/^pathPrefix$/, "/v1/reports"],
  [/Header$/, "X-Api-Key"],
  [/^removeResponseField$/, "internal.debug"],
  [/^keyName$/, "X-Api-Key"],
  [/^(keyValue|clientSecret|secret|value)$/, "sk_live_51Hx9c2e7b4d"],
  [/^prefix$/, "Key "],
  [/(Path|path)$/, "/v1/status"],
  [/^(pattern|pathPattern)$/, "^/v1/"],
  [/(Name|name)$/, "example"],
  [/(At|Created|Updated|Expiry|expires|Date)$/, WHEN],
  [/^currency$/, "usd"],
  [/^(token)$/, "u-3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e"],
  [/^(tokenPreview)$/, "u-3f9a…9c2e"],
];

/** Numbers by property name, used when the schema's bounds allow them. */
const NUMBER_BY_NAME: readonly [RegExp, number][] = [
  [/[Tt]imeoutSeconds$/, 30],
  [/^priority$/, 10],
  [/^limit$/, 20],
  [/^(minute|hour|day|month)$/, 1000],
  [/[Mm]s$|ResponseTime$/, 120],
  [/^status$/, 200],
];

/** Booleans by property name (`false` otherwise). */
const TRUE_BY_NAME = /(Active|^enabled|^tokenReceived)$/;

const BY_FORMAT: Readonly<Record<string, string>> = {
  "date-time": WHEN,
  date: "2026-01-15",
  email: "ada@example.com",
  uri: "https://api.example.com/v1",
  url: "https://api.example.com/v1",
  uuid: "2e4c6a8b-1d3f-4a5c-9e7b-0f2d4b6a8c1e",
  ipv4: "203.0.113.7",
  ipv6: "2001:db8::7",
  cidrv4: "203.0.113.0/24",
  cidrv6: "2001:db8::/32",
};

/** Candidates tried against a string's `pattern`, in order. */
const PATTERN_CANDIDATES = [
  "example",
  "2026-01",
  "payments-api",
  "u-3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e",
  "2e4c6a8b-1d3f-4a5c-9e7b-0f2d4b6a8c1e",
  "X-Api-Key",
  "/v1/status",
  "$.data.id",
  "data.id",
  "https://api.example.com/v1",
  "203.0.113.0/24",
  "abc",
  "a",
  "1",
];

function fitLength(value: string, schema: Json): string {
  const min = typeof schema.minLength === "number" ? schema.minLength : 0;
  const max = typeof schema.maxLength === "number" ? schema.maxLength : Number.POSITIVE_INFINITY;
  let fitted = value;
  while (fitted.length < min) fitted += "x";
  return fitted.length > max ? fitted.slice(0, max) : fitted;
}

function stringExample(schema: Json, name: string): string {
  if (typeof schema.format === "string" && BY_FORMAT[schema.format])
    return BY_FORMAT[schema.format] as string;
  if (typeof schema.pattern === "string") {
    const pattern = new RegExp(schema.pattern, "u");
    const byName = BY_NAME.find(([test]) => test.test(name))?.[1];
    const found = [byName, ...PATTERN_CANDIDATES].find(
      (candidate) => candidate !== undefined && pattern.test(fitLength(candidate, schema)),
    );
    return fitLength(found ?? "example", schema);
  }
  const byName = BY_NAME.find(([test]) => test.test(name))?.[1];
  return fitLength(byName ?? "example", schema);
}

function numberExample(schema: Json, integer: boolean, name: string): number {
  const byName = NUMBER_BY_NAME.find(([test]) => test.test(name))?.[1];
  if (byName !== undefined) {
    const fits =
      (typeof schema.minimum !== "number" || byName >= schema.minimum) &&
      (typeof schema.maximum !== "number" || byName <= schema.maximum) &&
      (typeof schema.exclusiveMinimum !== "number" || byName > schema.exclusiveMinimum) &&
      (typeof schema.exclusiveMaximum !== "number" || byName < schema.exclusiveMaximum);
    if (fits) return byName;
  }
  const min =
    typeof schema.minimum === "number"
      ? schema.minimum
      : typeof schema.exclusiveMinimum === "number"
        ? schema.exclusiveMinimum + (integer ? 1 : 0.5)
        : undefined;
  const max =
    typeof schema.maximum === "number"
      ? schema.maximum
      : typeof schema.exclusiveMaximum === "number"
        ? schema.exclusiveMaximum - (integer ? 1 : 0.5)
        : undefined;
  let value = min !== undefined && min > 1 ? min : 1;
  if (max !== undefined && value > max) value = max;
  if (min !== undefined && value < min) value = min;
  return integer ? Math.ceil(value) : value;
}

/**
 * A value satisfying `schema` (as far as its keywords go: refinements described in prose are the
 * operation's own override). `$ref`s resolve against `components` (`#/components/schemas/X`);
 * `name` is the property the value is for.
 */
export function exampleOf(
  schema: unknown,
  components: Readonly<Record<string, Json>>,
  name = "",
  depth = 0,
): unknown {
  if (!schema || typeof schema !== "object" || depth > 12) return null;
  const node = schema as Json;
  if (typeof node.$ref === "string") {
    const target = components[node.$ref.replace("#/components/schemas/", "")];
    return exampleOf(target, components, name, depth + 1);
  }
  if ("example" in node) return node.example;
  if (Array.isArray(node.examples) && node.examples.length) return node.examples[0];
  if ("const" in node) return node.const;
  if (Array.isArray(node.enum) && node.enum.length) return node.enum[0];
  if ("default" in node && node.default !== undefined) return node.default;
  for (const key of ["oneOf", "anyOf"] as const) {
    const branches = node[key];
    if (Array.isArray(branches) && branches.length) {
      // A nullable field shows its value, not null.
      const chosen = branches.find((branch) => (branch as Json)?.type !== "null") ?? branches[0];
      return exampleOf(chosen, components, name, depth + 1);
    }
  }
  if (Array.isArray(node.allOf)) {
    return Object.assign(
      {},
      ...node.allOf.map((part) => exampleOf(part, components, name, depth + 1) as object),
    );
  }
  const type = Array.isArray(node.type) ? node.type.find((t) => t !== "null") : node.type;
  switch (type) {
    case "string":
      return stringExample(node, name);
    case "integer":
      return numberExample(node, true, name);
    case "number":
      return numberExample(node, false, name);
    case "boolean":
      return TRUE_BY_NAME.test(name);
    case "null":
      return null;
    case "array": {
      const count = typeof node.minItems === "number" && node.minItems > 1 ? node.minItems : 1;
      if (typeof node.maxItems === "number" && node.maxItems === 0) return [];
      const prefix = Array.isArray(node.prefixItems) ? node.prefixItems : [];
      const items = prefix.map((item) => exampleOf(item, components, name, depth + 1));
      for (let index = items.length; index < count; index += 1) {
        items.push(exampleOf(node.items, components, singular(name), depth + 1));
      }
      return items;
    }
    default:
      break;
  }
  if (type === "object" || node.properties || node.additionalProperties) {
    const result: Record<string, unknown> = {};
    for (const [key, property] of Object.entries((node.properties ?? {}) as Record<string, unknown>)) {
      result[key] = exampleOf(property, components, key, depth + 1);
    }
    const extra = node.additionalProperties;
    if (!node.properties && extra && typeof extra === "object") {
      const keySchema = (node.propertyNames ?? {}) as Json;
      const key = keySchema.type === "string" ? stringExample(keySchema, `${name}Key`) : "example";
      result[/header/i.test(name) ? "X-Request-Source" : key] = exampleOf(extra, components, name, depth + 1);
    }
    return result;
  }
  // The empty schema: any value (free-form data).
  return "value";
}

const singular = (name: string) => (name.endsWith("s") ? name.slice(0, -1) : name);

/** The error answers' examples, one per status (the messages the API answers with). */
export const ERROR_EXAMPLES: Readonly<Record<number, Json>> = {
  400: {
    message: "Input failed data validation",
    fields: ["credentialName"],
    errors: ["credentialName: must not be empty"],
  },
  401: { message: "Unauthorized" },
  403: { message: "Forbidden" },
  404: { message: "Client not found" },
  405: { message: "Method not allowed" },
  409: { message: "A resource with this name already exists" },
  429: { message: "Too many requests: rate limit exceeded", retryAfter: 30 },
  500: { message: "Internal server error", requestId: "1f0c2e4a-6b8d-4f1a-9c3e-5d7b9a1c3e5f" },
  502: { message: "The upstream answered with an error" },
  503: { message: "Service temporarily unavailable" },
  504: { message: "The upstream timed out" },
};
