/**
 * The API's request schemas as the console's forms read them: the schema of an operation's body
 * (generated from the registry's OpenAPI document by console/scripts/api-types.ts), the branch of a
 * oneOf a value chooses, client-side validation against the schema, and the body to send. Plain
 * functions, unit-tested in test/unit/console-schema.test.ts; console/src/schema-form.tsx renders
 * them.
 */
import { REQUEST_SCHEMAS } from "./api/request-schemas.ts";

export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  default?: unknown;
  format?: string;
  /** A value sent and never answered back (a secret): entered in a password field. */
  writeOnly?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  discriminator?: { propertyName: string };
}

export type FormValue = Record<string, unknown>;
/** Error messages by field path (`limits.minute`). */
export type FieldErrors = Record<string, string>;

type Method = "POST" | "PUT" | "PATCH";
/** The request-body schema of an operation of the registry ("POST", "/api/clients/{clientId}/targets"). */
export function requestSchema(method: Method, path: string): JsonSchema {
  const schema = (REQUEST_SCHEMAS as Record<string, JsonSchema | undefined>)[`${method} ${path}`];
  if (!schema) throw new Error(`no request schema for ${method} ${path}`);
  return schema;
}

/** The schema without its `null` alternative, and whether null is allowed. */
export function unwrapNullable(schema: JsonSchema): { schema: JsonSchema; nullable: boolean } {
  const options = schema.anyOf;
  if (options) {
    const rest = options.filter((option) => option.type !== "null");
    if (rest.length === 1 && rest.length < options.length)
      return { schema: rest[0] as JsonSchema, nullable: true };
  }
  if (Array.isArray(schema.type) && schema.type.includes("null")) {
    const type = schema.type.filter((t) => t !== "null");
    return { schema: { ...schema, type: type.length === 1 ? type[0] : type }, nullable: true };
  }
  return { schema, nullable: false };
}

/** The constant value a branch of a oneOf has for `property` (its `const`, or a one-value enum). */
export const constantOf = (branch: JsonSchema, property: string): unknown => {
  const field = branch.properties?.[property];
  if (!field) return undefined;
  if (field.const !== undefined) return field.const;
  return field.enum?.length === 1 ? field.enum[0] : undefined;
};

/** The property that tells a oneOf's branches apart, when there is one. */
export function discriminatorOf(schema: JsonSchema): string | undefined {
  const branches = schema.oneOf;
  if (!branches?.length) return undefined;
  if (schema.discriminator?.propertyName) return schema.discriminator.propertyName;
  const first = branches[0]?.properties ?? {};
  return Object.keys(first).find((name) =>
    branches.every((branch) => constantOf(branch, name) !== undefined),
  );
}

/** The branch of a oneOf chosen by the value's discriminator (or the first), merged with the outer schema. */
export function branchOf(schema: JsonSchema, value: FormValue): JsonSchema {
  const property = discriminatorOf(schema);
  const branches = schema.oneOf ?? [];
  const chosen =
    (property && branches.find((branch) => constantOf(branch, property) === value[property])) ?? branches[0];
  if (!chosen) return schema;
  return {
    ...schema,
    oneOf: undefined,
    properties: { ...schema.properties, ...chosen.properties },
    required: [...(schema.required ?? []), ...(chosen.required ?? [])],
  };
}

export const typeOf = (schema: JsonSchema): string | undefined =>
  Array.isArray(schema.type) ? schema.type[0] : (schema.type ?? (schema.enum ? "string" : undefined));

/** "credentialName" → "Credential name". */
export const humanise = (name: string) => {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_-]+/g, " ")
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
};

export const isEmpty = (value: unknown) =>
  value === undefined ||
  value === "" ||
  (Array.isArray(value) && value.length === 0) ||
  (typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0);

const isObject = (value: unknown): value is FormValue =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const regex = (pattern: string): RegExp | undefined => {
  try {
    return new RegExp(pattern, "u");
  } catch {
    return undefined;
  }
};

/** The value's problems against the schema, by field path; empty when it is valid. */
export function validate(schema: JsonSchema, value: unknown, path = ""): FieldErrors {
  const errors: FieldErrors = {};
  const at = (name: string) => (path ? `${path}.${name}` : name);
  const add = (message: string) => {
    errors[path || "body"] ??= message;
  };
  if (schema.oneOf) return validate(branchOf(schema, (value ?? {}) as FormValue), value, path);
  const { schema: inner, nullable } = unwrapNullable(schema);
  if (value === null) {
    if (!nullable) add("is required");
    return errors;
  }
  if (value === undefined) return errors;
  const type = typeOf(inner);
  if (inner.const !== undefined && value !== inner.const) add(`must be ${JSON.stringify(inner.const)}`);
  if (inner.enum && !inner.enum.includes(value)) add(`must be one of ${inner.enum.join(", ")}`);
  if (type === "string") {
    if (typeof value !== "string") add("must be text");
    else {
      const length = [...value].length;
      if (inner.minLength !== undefined && length < inner.minLength)
        add(inner.minLength === 1 ? "is required" : `must be at least ${inner.minLength} characters`);
      if (inner.maxLength !== undefined && length > inner.maxLength)
        add(`must be at most ${inner.maxLength} characters`);
      if (inner.pattern && length > 0 && regex(inner.pattern)?.test(value) === false)
        add("has an invalid format");
      if (inner.format === "email" && length > 0 && !/^[^@\s]+@[^@\s]+$/.test(value))
        add("must be an e-mail address");
      if (inner.format === "uri" && length > 0 && !URL.canParse(value)) add("must be a URL");
    }
  } else if (type === "integer" || type === "number") {
    if (typeof value !== "number" || Number.isNaN(value)) add("must be a number");
    else {
      if (type === "integer" && !Number.isInteger(value)) add("must be a whole number");
      if (inner.minimum !== undefined && value < inner.minimum) add(`must be at least ${inner.minimum}`);
      if (inner.maximum !== undefined && value > inner.maximum) add(`must be at most ${inner.maximum}`);
      if (inner.exclusiveMinimum !== undefined && value <= inner.exclusiveMinimum)
        add(`must be more than ${inner.exclusiveMinimum}`);
      if (inner.exclusiveMaximum !== undefined && value >= inner.exclusiveMaximum)
        add(`must be less than ${inner.exclusiveMaximum}`);
    }
  } else if (type === "boolean") {
    if (typeof value !== "boolean") add("must be true or false");
  } else if (type === "array") {
    if (!Array.isArray(value)) add("must be a list");
    else {
      if (inner.minItems !== undefined && value.length < inner.minItems)
        add(`needs at least ${inner.minItems}`);
      if (inner.maxItems !== undefined && value.length > inner.maxItems)
        add(`takes at most ${inner.maxItems}`);
      if (inner.items)
        for (const [index, item] of value.entries())
          Object.assign(errors, validate(inner.items, item, at(String(index))));
    }
  } else if (type === "object" || inner.properties) {
    if (typeof value !== "object" || Array.isArray(value)) add("must be an object");
    else {
      const record = value as FormValue;
      for (const name of inner.required ?? [])
        if (isEmpty(record[name]) && record[name] !== null && !isObject(record[name]))
          errors[at(name)] ??= "is required";
      for (const [name, field] of Object.entries(inner.properties ?? {}))
        if (record[name] !== undefined) Object.assign(errors, validate(field, record[name], at(name)));
      if (typeof inner.additionalProperties === "object")
        for (const [name, item] of Object.entries(record)) {
          if (inner.properties?.[name]) continue;
          const names = inner.propertyNames;
          if (names?.pattern && regex(names.pattern)?.test(name) === false)
            errors[at(name)] ??= `the name "${name}" has an invalid format`;
          if (names?.maxLength !== undefined && name.length > names.maxLength)
            errors[at(name)] ??= `the name must be at most ${names.maxLength} characters`;
          Object.assign(errors, validate(inner.additionalProperties, item, at(name)));
        }
    }
  }
  return errors;
}

/**
 * The body to send: empty optional fields left out (or null, for a nullable field that had a value
 * before: clearing it is then a change), empty nested objects left out.
 */
export function bodyOf(schema: JsonSchema, value: FormValue, before: FormValue = {}): FormValue {
  const effective = schema.oneOf ? branchOf(schema, value) : schema;
  const body: FormValue = {};
  for (const [name, field] of Object.entries(effective.properties ?? {})) {
    const item = value[name];
    const { schema: inner, nullable } = unwrapNullable(field);
    if (isEmpty(item)) {
      if (item !== undefined && nullable && !isEmpty(before[name])) body[name] = null;
      else if (item !== undefined && typeOf(inner) === "array" && effective.required?.includes(name))
        body[name] = [];
      // A required object given empty (a secret with no fields): sent as {}, its own checks apply.
      else if (isObject(item) && effective.required?.includes(name)) body[name] = {};
      continue;
    }
    if (
      typeOf(inner) === "object" &&
      inner.properties &&
      item &&
      typeof item === "object" &&
      !Array.isArray(item)
    ) {
      const nested = bodyOf(inner, item as FormValue, (before[name] ?? {}) as FormValue);
      if (Object.keys(nested).length > 0) body[name] = nested;
      else if (nullable && !isEmpty(before[name])) body[name] = null;
      continue;
    }
    body[name] = item;
  }
  return body;
}

/** The first enum of a property named like a region (`targetRegion`, `region`) in the document. */
export function regionsOf(document: unknown): string[] | undefined {
  const stack: unknown[] = [document];
  while (stack.length > 0) {
    const node = stack.pop();
    if (!node || typeof node !== "object") continue;
    const properties = (node as { properties?: Record<string, { enum?: unknown[] }> }).properties;
    if (properties)
      for (const [name, property] of Object.entries(properties))
        if (/region$/i.test(name) && Array.isArray(property?.enum) && property.enum.length > 0)
          return property.enum.map(String);
    stack.push(...Object.values(node));
  }
  return undefined;
}
