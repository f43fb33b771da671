/**
 * Evaluation of the predicates and variables shared by meters (spec 2.9) and transforms (2.10),
 * with the access rules' linear-time pattern engine (re2js). Pure: the data plane passes the request
 * (method, path, headers, query, raw body, jwtVerify claims). See docs/predicates.md.
 *
 * - Compile once per configuration load (compilePredicates / compileMeterMatcher); never throws.
 * - Prepare once per request (preparePredicateRequest); every matcher and variable binding of the
 *   request shares it: the JSON body is parsed at most once, and only if a body check or a body
 *   variable asks for it, and one work budget covers all pattern matching of the request.
 * - A check is undecided when the value it tests is too long (MAX_MATCHED_VALUE_LENGTH,
 *   MAX_MATCHED_VALUES), the body is too large to parse (MAX_PARSED_BODY_BYTES), a stored pattern
 *   no longer compiles, or matching would exceed MAX_PREDICATE_WORK_PER_REQUEST. An undecided
 *   predicate set is settled by the matcher's `undecided` choice; a meter applies (the request is
 *   counted and limited), so padding a value can never escape a quota.
 */
import type { RE2JS } from "re2js";
import {
  type FieldValues,
  fieldValues,
  headerValue,
  MAX_MATCHED_VALUE_LENGTH,
  MAX_MATCHED_VALUES,
  checkOutcome as valuesOutcome,
} from "#lib/domain/request-view.ts";
import {
  BudgetedMatcher,
  compileRulePattern,
  type EvaluationStats,
  newEvaluationStats,
  patternCost,
  RulePatternError,
} from "#lib/domain/rules/regex.ts";
import { boundedText, type ParsedBody, parseJsonBody, readDotPath } from "./dot-path.ts";
import type { PredicatePresence, StoredPredicates, VariableValue } from "./schema.ts";

export { MAX_MATCHED_VALUE_LENGTH, MAX_MATCHED_VALUES };

/**
 * Matching work one request may spend on all its predicates (meters and transforms together), in
 * pattern instructions x characters: the same bound, and so the same few milliseconds of CPU at
 * most, as the access rules' MAX_RULE_WORK_PER_REQUEST (rule-evaluator.ts).
 */
export const MAX_PREDICATE_WORK_PER_REQUEST = 125_000;
/** Largest request body parsed as JSON for body checks and body variables (bytes). */
export const MAX_PARSED_BODY_BYTES = 1024 * 1024;
/** Longest bound variable value (characters); a longer value is cut to this length. */
export const MAX_VARIABLE_VALUE_LENGTH = 256;

type Values = string | string[] | undefined;

/** The request as the data plane sees it. */
export interface PredicateRequest {
  method: string;
  /** The path after `/api/{proxyId}`, starting with `/` (a query string, if any, is ignored). */
  path: string;
  /** Header names in lower case (folded again here). */
  headers: Record<string, Values>;
  /** Query parameters, names as sent (case-sensitive). */
  query: Record<string, Values>;
  /** The raw request body, if any. */
  body?: Uint8Array | string | null;
  /** The request's Content-Type header value, if any. */
  contentType?: string | null;
  /** The verified claims of a jwtVerify caller; undefined for any other caller. */
  claims?: Record<string, unknown> | null;
}

/** Result of one predicate set: true / false, or undefined when a check could not be decided. */
export type Outcome = boolean | undefined;

function valuesOf(value: Values): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [value];
}

/** A request indexed for evaluation: fields built on first use, pattern results memoised. */
export class PreparedPredicateRequest {
  readonly method: string;
  readonly stats: EvaluationStats;
  private readonly request: PredicateRequest;
  private readonly headers = new Map<string, string[]>();
  private readonly fields = new Map<string, FieldValues | undefined | "undecided">();
  private parsedBody: ParsedBody | null = null;
  private segments: string[] | null = null;
  private readonly matcher: BudgetedMatcher;

  constructor(
    request: PredicateRequest,
    stats: EvaluationStats = newEvaluationStats(),
    budget = MAX_PREDICATE_WORK_PER_REQUEST,
  ) {
    this.request = request;
    this.stats = stats;
    this.matcher = new BudgetedMatcher(budget, stats);
    this.method = request.method.toUpperCase();
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      const values = valuesOf(value);
      if (values.length === 0) continue;
      const lower = name.toLowerCase();
      const existing = this.headers.get(lower);
      if (existing) existing.push(...values);
      else this.headers.set(lower, values);
    }
  }

  /** The path without a query string. */
  get path(): string {
    const queryStart = this.request.path.indexOf("?");
    return queryStart === -1 ? this.request.path : this.request.path.slice(0, queryStart);
  }

  /** The path segments after `/api/{proxyId}`, percent-decoded when well formed. */
  pathSegments(): string[] {
    if (this.segments === null) {
      const path = this.path;
      this.segments = (path.startsWith("/") ? path.slice(1) : path).split("/").map((segment) => {
        try {
          return decodeURIComponent(segment);
        } catch {
          return segment;
        }
      });
    }
    return this.segments;
  }

  headerValues(name: string): string[] | undefined {
    return this.headers.get(name.toLowerCase());
  }

  queryValues(name: string): string[] | undefined {
    if (!Object.hasOwn(this.request.query ?? {}, name)) return undefined;
    const values = valuesOf(this.request.query[name]);
    return values.length > 0 ? values : undefined;
  }

  /** The JSON body, parsed on first use. */
  body(): ParsedBody {
    if (this.parsedBody === null)
      this.parsedBody = parseJsonBody(this.request.body, this.request.contentType, MAX_PARSED_BODY_BYTES);
    return this.parsedBody;
  }

  claim(name: string): unknown {
    const claims = this.request.claims;
    if (!claims || typeof claims !== "object" || !Object.hasOwn(claims, name)) return undefined;
    return claims[name];
  }

  /** The values a check tests: undefined when missing, `undecided` when they cannot be known. */
  field(field: string): FieldValues | undefined | "undecided" {
    if (this.fields.has(field)) return this.fields.get(field);
    const entry = this.buildField(field);
    this.fields.set(field, entry);
    return entry;
  }

  private buildField(field: string): FieldValues | undefined | "undecided" {
    const kind = field.slice(0, 2);
    const name = field.slice(2);
    if (field === "path") return fieldValues([[this.path]]);
    if (kind === "h:") return fieldValues(this.headerValues(name)?.map(headerValue));
    if (kind === "q:") return fieldValues(this.queryValues(name)?.map((value) => [value]));
    let value: unknown;
    if (kind === "b:") {
      const body = this.body();
      if (body.kind !== "json") return body.kind === "undecided" ? "undecided" : undefined;
      value = readDotPath(body.value, name);
    } else value = this.claim(name);
    const text = jsonValueText(value, MAX_MATCHED_VALUE_LENGTH);
    if (text === "overLong") return { values: [], overLong: true };
    if (text === undefined) return undefined;
    // A JSON array is a list: tested as a whole and element by element (request-view.ts).
    const elements = Array.isArray(value)
      ? value.flatMap((item) => boundedText(item, MAX_MATCHED_VALUE_LENGTH)?.text ?? [])
      : [];
    return fieldValues([[text, ...elements]]);
  }

  /**
   * How the field's values match (request-view.ts); each (pattern, field) pair runs once per
   * request. Undefined when running it would take the request over the request's work budget.
   */
  matches(regex: RE2JS, cost: number, field: string, entry: FieldValues) {
    return this.matcher.matches(regex, cost, field, entry.values);
  }
}

/** A compiled check on one field: the same shape for rules and predicates. */
export interface FieldCheck {
  /** `path`, `h:<header>`, `q:<parameter>`, `b:<dot path>` or `t:<claim>`. */
  field: string;
  pattern: { regex: RE2JS; cost: number } | null;
  presence: PredicatePresence;
}

/** The outcome of one check (request-view.ts checkOutcome); `broad` for deny rules and applying sets. */
export const fieldCheckOutcome = (
  check: FieldCheck,
  request: PreparedPredicateRequest,
  broad: boolean,
): Outcome => {
  const { pattern } = check;
  return valuesOutcome(
    request.field(check.field),
    check.presence,
    pattern && ((entry) => request.matches(pattern.regex, pattern.cost, check.field, entry)),
    broad,
  );
};

/**
 * The text a body or claim check tests: a string as it is, another value in its JSON form; JSON
 * null and absent values are missing (undefined); `overLong` beyond `limit` characters.
 */
function jsonValueText(value: unknown, limit: number): string | undefined | "overLong" {
  if (value === null || value === undefined) return undefined;
  const text = boundedText(value, limit);
  if (text === undefined) return undefined;
  return text.complete ? text.text : "overLong";
}

export function preparePredicateRequest(
  request: PredicateRequest | PreparedPredicateRequest,
  stats?: EvaluationStats,
): PreparedPredicateRequest {
  return request instanceof PreparedPredicateRequest ? request : new PreparedPredicateRequest(request, stats);
}

type CompiledCheck = FieldCheck;

/** One predicate set, compiled: build once per configuration load. */
export interface CompiledPredicates {
  /** Upper case; null when no method is listed. */
  methods: ReadonlySet<string> | null;
  /** Checks without a pattern first (cheap), then pattern checks (body and claims last). */
  checks: readonly CompiledCheck[];
  /** Set when a stored pattern no longer compiles: the set is then always undecided. */
  invalid: string | null;
  /** Whether no predicate is given at all. */
  empty: boolean;
  /** Whether evaluating needs the JSON body. */
  needsBody: boolean;
  /** Sum of the pattern costs (instructions). */
  cost: number;
}

/** Stored predicate fields; each may be null or absent (unset). */
export type PredicateFieldsInput = {
  [K in keyof StoredPredicates]?: StoredPredicates[K] | null;
};

const FIELD_ORDER: Record<string, number> = { "h:": 0, "q:": 0, path: 1, "t:": 2, "b:": 3 };
const orderOf = (field: string) => FIELD_ORDER[field === "path" ? "path" : field.slice(0, 2)] ?? 4;

/** Compile a predicate set (patterns compiled with the rules' engine, no flags). Never throws. */
export function compilePredicates(predicates: PredicateFieldsInput): CompiledPredicates {
  const methods =
    predicates.methods && predicates.methods.length > 0
      ? new Set(predicates.methods.map((method) => method.toUpperCase()))
      : null;
  const named = [
    ...(predicates.headers ?? []).map((c) => ({ ...c, field: `h:${c.name.toLowerCase()}` })),
    ...(predicates.query ?? []).map((c) => ({ ...c, field: `q:${c.name}` })),
    ...(predicates.path ? [{ ...predicates.path, field: "path" }] : []),
    ...(predicates.token ?? []).map((c) => ({ ...c, field: `t:${c.claim}` })),
    ...(predicates.body ?? []).map((c) => ({ ...c, field: `b:${c.path}` })),
  ];
  const needsBody = (predicates.body ?? []).length > 0;
  const empty = methods === null && named.length === 0;
  let cost = 0;
  try {
    const checks: CompiledCheck[] = [
      ...named
        .filter((c) => typeof c.pattern !== "string")
        .sort((a, b) => orderOf(a.field) - orderOf(b.field))
        .map((c) => ({ field: c.field, pattern: null, presence: c.presence ?? "present" })),
      ...named
        .filter((c): c is typeof c & { pattern: string } => typeof c.pattern === "string")
        .sort((a, b) => orderOf(a.field) - orderOf(b.field))
        .map((c) => {
          const regex = compileRulePattern(c.pattern, "");
          const patternCostValue = patternCost(regex);
          cost += patternCostValue;
          return {
            field: c.field,
            pattern: { regex, cost: patternCostValue },
            presence: c.presence ?? "present",
          };
        }),
    ];
    return { methods, checks, invalid: null, empty, needsBody, cost };
  } catch (error) {
    if (!(error instanceof RulePatternError)) throw error;
    return { methods, checks: [], invalid: error.reason, empty, needsBody, cost };
  }
}

/**
 * Whether every given predicate holds (true for an empty set); false as soon as one fails;
 * undefined if none fails but one could not be decided. `broad` (default): the set makes its meter
 * or transform apply when it holds (`include`), so a field with several values holds when any
 * value matches; false for an `exclude` set, which holds only when every value matches
 * (request-view.ts checkOutcome).
 */
export function predicatesOutcome(
  compiled: CompiledPredicates,
  request: PredicateRequest | PreparedPredicateRequest,
  broad = true,
): Outcome {
  const prepared = preparePredicateRequest(request);
  if (compiled.methods && !compiled.methods.has(prepared.method)) return false;
  if (compiled.invalid !== null) return undefined;
  let outcome: Outcome = true;
  for (const check of compiled.checks) {
    const result = fieldCheckOutcome(check, prepared, broad);
    if (result === false) return false;
    if (result === undefined) outcome = undefined;
  }
  return outcome;
}

export type PredicateMode = "all" | "conditional";
export type PredicateEffect = "include" | "exclude";

export interface MatcherOptions {
  mode: PredicateMode;
  /** For `conditional`: include (apply when all hold) or exclude (apply unless all hold); null = include. */
  effect: PredicateEffect | null | undefined;
  /** Whether an undecided predicate set applies. Meters: true (the request is counted). */
  undecided: boolean;
}

export interface Matcher {
  (request: PredicateRequest | PreparedPredicateRequest): boolean;
  readonly compiled: CompiledPredicates;
  /** Whether evaluating may parse the JSON body (conditional mode with body checks). */
  readonly needsBody: boolean;
}

/**
 * A compiled applicability test: `all` applies to every request (predicates are not evaluated);
 * `conditional` + `include` applies when every given predicate holds; `conditional` + `exclude`
 * applies unless every given predicate holds. An empty conditional set holds for every request.
 */
export function compileMatcher(predicates: PredicateFieldsInput, options: MatcherOptions): Matcher {
  const compiled = compilePredicates(predicates);
  const conditional = options.mode === "conditional";
  const exclude = options.effect === "exclude";
  const matcher = (request: PredicateRequest | PreparedPredicateRequest): boolean => {
    if (!conditional) return true;
    const outcome = predicatesOutcome(compiled, request, !exclude);
    if (outcome === undefined) return options.undecided;
    return exclude ? !outcome : outcome;
  };
  return Object.assign(matcher, { compiled, needsBody: conditional && compiled.needsBody });
}

/** The applicability fields of a stored meter. */
export interface MeterApplicability extends PredicateFieldsInput {
  meterMode?: PredicateMode | null;
  effect?: PredicateEffect | null;
}

/** Whether a meter applies to a request; undecided predicates count the request (the meter applies). */
export function compileMeterMatcher(meter: MeterApplicability): Matcher {
  return compileMatcher(meter, {
    mode: meter.meterMode ?? "all",
    effect: meter.effect,
    undecided: true,
  });
}

/** Bound variables: name -> value, or undefined when the request has no value for it. */
export type BoundVariables = Record<string, string | undefined>;

/**
 * Bind variables from the request (schema.ts `Variable`): a header or query parameter (its first
 * value), a path segment (index after `/api/{proxyId}`, percent-decoded), a body dot path, a token
 * claim. Strings as they are, other values in their JSON form; JSON null, an empty string and a
 * missing value bind undefined; values are cut to MAX_VARIABLE_VALUE_LENGTH characters. The result
 * has no prototype, so any variable name is a plain own key.
 */
export function bindVariables(
  variables: readonly VariableValue[] | null | undefined,
  request: PredicateRequest | PreparedPredicateRequest,
): BoundVariables {
  const bound: BoundVariables = Object.create(null);
  if (!variables || variables.length === 0) return bound;
  const prepared = preparePredicateRequest(request);
  for (const variable of variables) bound[variable.name] = variableValue(variable, prepared);
  return bound;
}

function variableValue(variable: VariableValue, request: PreparedPredicateRequest): string | undefined {
  let raw: unknown;
  switch (variable.source) {
    case "header":
      raw = request.headerValues(variable.key)?.[0];
      break;
    case "query":
      raw = request.queryValues(variable.key)?.[0];
      break;
    case "path": {
      const index = Number(variable.key);
      raw = Number.isInteger(index) ? request.pathSegments()[index] : undefined;
      break;
    }
    case "body": {
      const body = request.body();
      raw = body.kind === "json" ? readDotPath(body.value, variable.key) : undefined;
      break;
    }
    case "token":
      raw = request.claim(variable.key);
      break;
  }
  if (raw === null || raw === undefined || raw === "") return undefined;
  return boundedText(raw, MAX_VARIABLE_VALUE_LENGTH)?.text;
}

/** Whether binding these variables parses the JSON body. */
export const variablesNeedBody = (variables: readonly VariableValue[] | null | undefined): boolean =>
  (variables ?? []).some((variable) => variable.source === "body");
