/**
 * Checks every Core API input passes before a handler reads it, so that no input, however
 * malformed, reaches code that would fail on it with a 500:
 * - path parameters are decoded here, and a malformed escape is a 400 naming the parameter;
 * - a parsed JSON body is walked once, without recursion: nesting deeper than DynamoDB's 32
 *   levels, ill-formed Unicode (a lone surrogate) in any string or key, a `__proto__` key (which
 *   schemas would silently drop) and numbers JSON.parse turned into Infinity are refused with a
 *   400 naming the field;
 * - query parameter names and values must be well-formed Unicode too.
 *
 * Schemas then apply their own, tighter rules field by field (lib/http/schemas.ts,
 * lib/http/resource-schemas.ts).
 */
import { validationFailed } from "./errors.ts";

/** DynamoDB stores documents nested at most 32 levels deep: no body may nest deeper. */
export const MAX_JSON_DEPTH = 32;
/** Ids are UUIDs; anything much longer is not an id (and would overflow a DynamoDB key). */
export const MAX_PATH_PARAMETER_LENGTH = 128;
/** A body with thousands of bad strings is answered with the first few. */
const MAX_ISSUES = 10;

export interface InputIssue {
  field: string;
  problem: string;
}

const ILL_FORMED = "is not well-formed Unicode (it contains a lone surrogate)";

/** With the `u` flag a surrogate pair is one code point, so only a lone surrogate matches. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
/** String.prototype.isWellFormed (ES2024), which this project's TypeScript lib (ES2023) does not declare. */
export const isWellFormed = (value: string): boolean => !LONE_SURROGATE.test(value);

/** The field path of a value as parseInput names it: `a.b.0.c`, or the root's name. */
const fieldOf = (path: readonly (string | number)[], root: string) => (path.length ? path.join(".") : root);

type JsonPath = (string | number)[];

/**
 * Walk a parsed JSON value in document order with its own stack (a 10,000-deep body cannot
 * overflow the call stack), never below `maxDepth` levels (the root object or array is level 1).
 * `visit` sees every value and every object key; `tooDeep` is called for each container below the
 * limit instead of descending into it. Stops once `done()` says so.
 */
function walkJson(
  value: unknown,
  maxDepth: number,
  handlers: {
    value(node: unknown, path: JsonPath): void;
    key(key: string, path: JsonPath): boolean;
    tooDeep(path: JsonPath): void;
    done(): boolean;
  },
): void {
  const stack: { node: unknown; path: JsonPath; depth: number }[] = [{ node: value, path: [], depth: 0 }];
  for (let top = stack.pop(); top && !handlers.done(); top = stack.pop()) {
    const { node, path, depth } = top;
    handlers.value(node, path);
    if (node === null || typeof node !== "object") continue;
    if (depth + 1 > maxDepth) {
      handlers.tooDeep(path);
      continue;
    }
    const children: { node: unknown; path: JsonPath; depth: number }[] = [];
    if (Array.isArray(node)) {
      node.forEach((item, index) => {
        children.push({ node: item, path: [...path, index], depth: depth + 1 });
      });
    } else {
      for (const [key, item] of Object.entries(node)) {
        if (handlers.key(key, path)) children.push({ node: item, path: [...path, key], depth: depth + 1 });
      }
    }
    // Reversed onto the stack, so the walk (and the issues) follow the document's order.
    for (const child of children.reverse()) stack.push(child);
  }
}

/**
 * The problems of a parsed JSON request body, in document order, at most MAX_ISSUES of them:
 * nesting deeper than `maxDepth`, ill-formed strings and keys, numbers beyond a double's range.
 */
export function jsonInputIssues(value: unknown, root = "body", maxDepth = MAX_JSON_DEPTH): InputIssue[] {
  const issues: InputIssue[] = [];
  walkJson(value, maxDepth, {
    value(node, path) {
      if (typeof node === "string" && !isWellFormed(node))
        issues.push({ field: fieldOf(path, root), problem: ILL_FORMED });
      else if (typeof node === "number" && !Number.isFinite(node))
        issues.push({ field: fieldOf(path, root), problem: "is a number out of range" });
    },
    key(key, path) {
      // Schemas build their output with assignments, so a `__proto__` entry would be dropped
      // without a word (or become a prototype): refused instead, like any key we cannot keep.
      if (key === "__proto__") {
        issues.push({
          field: fieldOf(path, root),
          problem: 'has the key "__proto__", which is not accepted',
        });
        return false;
      }
      if (isWellFormed(key)) return true;
      issues.push({ field: fieldOf(path, root), problem: `has a key that ${ILL_FORMED}` });
      return false;
    },
    // Name the outermost field that holds the deep value: that is the one the caller set.
    tooDeep(path) {
      issues.push({
        field: fieldOf(path.slice(0, 1), root),
        problem: `is nested more than ${maxDepth} levels deep`,
      });
    },
    done: () => issues.length >= MAX_ISSUES,
  });
  return issues.slice(0, MAX_ISSUES);
}

/** DynamoDB's smallest non-zero magnitude; larger numbers are bounded by the SDK's safe-integer rule. */
const DYNAMODB_MIN_MAGNITUDE = 1e-130;

/**
 * The problems of a free-form JSON document stored as a DynamoDB map (such as
 * `proxyAdditionalData`), as paths relative to it: an empty key (DynamoDB attribute names have at
 * least one character, and an item holding one cannot be read back), an integer beyond
 * Number.MAX_SAFE_INTEGER (the SDK refuses to marshal it) and a non-zero number smaller than
 * DynamoDB's 1e-130.
 */
export function storedDocumentIssues(
  value: unknown,
  maxDepth = MAX_JSON_DEPTH,
): { path: JsonPath; problem: string }[] {
  const issues: { path: JsonPath; problem: string }[] = [];
  walkJson(value, maxDepth, {
    value(node, path) {
      if (typeof node !== "number") return;
      const storable = Number.isInteger(node)
        ? Number.isSafeInteger(node)
        : Number.isFinite(node) && Math.abs(node) >= DYNAMODB_MIN_MAGNITUDE;
      if (!storable)
        issues.push({
          path,
          problem: `must be a number from ${DYNAMODB_MIN_MAGNITUDE} to ${Number.MAX_SAFE_INTEGER} in magnitude (or 0)`,
        });
    },
    key(key, path) {
      if (key.length > 0) return true;
      issues.push({ path, problem: "has an empty key" });
      return false;
    },
    tooDeep(path) {
      issues.push({ path, problem: `is nested more than ${maxDepth} levels deep` });
    },
    done: () => issues.length >= MAX_ISSUES,
  });
  return issues;
}

/** Parse a JSON request body and check it; any problem is the spec's 400 naming the field. */
export function parseJsonInput(raw: string, root = "body"): unknown {
  let value: unknown;
  try {
    value = JSON.parse(raw) as unknown;
  } catch {
    throw validationFailed([{ field: root, problem: "is not valid JSON" }]);
  }
  const issues = jsonInputIssues(value, root);
  if (issues.length > 0) throw validationFailed(issues);
  return value;
}

/** Query parameters (single- and multi-valued) with an ill-formed name or value, named `query.<name>`. */
export function queryIssues(
  query: Record<string, string | undefined> | null | undefined,
  multiQuery: Record<string, string[] | undefined> | null | undefined,
): InputIssue[] {
  const issues: InputIssue[] = [];
  const seen = new Set<string>();
  const check = (name: string, values: readonly (string | undefined)[]) => {
    if (seen.has(name)) return;
    const wellFormed = isWellFormed(name) && values.every((v) => v === undefined || isWellFormed(v));
    if (!wellFormed) {
      seen.add(name);
      issues.push({ field: isWellFormed(name) ? `query.${name}` : "query", problem: ILL_FORMED });
    }
  };
  for (const [name, value] of Object.entries(query ?? {})) check(name, [value]);
  for (const [name, values] of Object.entries(multiQuery ?? {})) check(name, values ?? []);
  return issues.slice(0, MAX_ISSUES);
}

/**
 * A path parameter as API Gateway passes it (still percent-encoded), decoded. A malformed escape
 * (`%ZZ`, or bytes that are not UTF-8), an empty value or one longer than any id is a 400 naming
 * the parameter, never the URIError decodeURIComponent throws.
 */
export function decodePathParameter(name: string, raw: string | undefined): string {
  if (!raw) throw validationFailed([{ field: name, problem: "is a required path parameter" }]);
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    throw validationFailed([{ field: name, problem: "is not valid percent-encoded UTF-8" }]);
  }
  if (!isWellFormed(value)) throw validationFailed([{ field: name, problem: ILL_FORMED }]);
  if (value.length > MAX_PATH_PARAMETER_LENGTH)
    throw validationFailed([
      { field: name, problem: `is longer than ${MAX_PATH_PARAMETER_LENGTH} characters` },
    ]);
  return value;
}
