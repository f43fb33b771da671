/**
 * The predicates and variable bindings shared by meters (spec 2.9) and transforms (2.10): the
 * accepted input shape, which is also the stored and returned shape. Evaluation lives in
 * `evaluate.ts`, with the rules' linear-time pattern engine (re2js).
 *
 * Element shapes (spec 2.10 leaves them "not shown"; documented in docs/predicates.md):
 * - `methods`: HTTP methods, upper case.
 * - `path`: {pattern, presence}, as a rule's path check.
 * - `query`, `headers`: arrays of {name, pattern?, presence}, as a rule's checks.
 * - `body`: array of {path, pattern?, presence}; `path` is a dot path into the JSON request body
 *   (`items.0.id`); a value that is not a string is matched in its JSON form.
 * - `token`: array of {claim, pattern?, presence}, over the claims of a jwtVerify caller.
 * - `variables`: array of {name, source, key}: `source` is header, query, path, body or token;
 *   `key` is the header name, the query parameter name, the path segment index counted from 0
 *   after `/api/{proxyId}` (as decimal digits), the body dot path, or the claim name.
 */
import { z } from "zod";
import { MAX_PATTERN_LENGTH, rulePatternProblem } from "#lib/domain/rules/regex.ts";
import { MAX_CHECK_NAME_LENGTH, RULE_METHODS } from "#lib/domain/rules/rule-schema.ts";
import { PREDICATE_PRESENCES, VARIABLE_SOURCES } from "#lib/shared/predicate-constants.ts";

export {
  PREDICATE_PRESENCES,
  type PredicatePresence,
  VARIABLE_SOURCES,
  type VariableSource,
} from "#lib/shared/predicate-constants.ts";

/** Most checks in one predicate array, and most variables. */
export const MAX_PREDICATE_CHECKS = 20;
export const MAX_VARIABLES = 10;
/** Most segments of a body dot path. */
export const MAX_BODY_PATH_SEGMENTS = 32;
export const MAX_VARIABLE_NAME_LENGTH = 64;

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;
/** A dot path: segments of anything but dots, at least one. */
const DOT_PATH = /^[^.]+(\.[^.]+)*$/;

const Presence = z.enum(PREDICATE_PRESENCES, { error: "must be present or absent" });
const Pattern = z
  .string({ error: "must be a string" })
  .min(1, "must not be empty")
  .max(MAX_PATTERN_LENGTH, `at most ${MAX_PATTERN_LENGTH} characters`)
  .superRefine((pattern, ctx) => {
    const problem = rulePatternProblem(pattern, "");
    if (problem) ctx.addIssue({ code: "custom", message: `is not a valid regular expression: ${problem}` });
  });

const Name = z
  .string({ error: "must be a string" })
  .min(1, "must not be empty")
  .max(MAX_CHECK_NAME_LENGTH, `at most ${MAX_CHECK_NAME_LENGTH} characters`);

const HeaderName = Name.regex(HEADER_NAME, "must be a valid HTTP header name").transform((name) =>
  name.toLowerCase(),
);

export const DotPath = Name.regex(DOT_PATH, "must be a dot path such as items.0.id").refine(
  (path) => path.split(".").length <= MAX_BODY_PATH_SEGMENTS,
  `at most ${MAX_BODY_PATH_SEGMENTS} segments`,
);

const check = <K extends string, T extends z.ZodType>(key: K, name: T) =>
  z
    .object(
      { [key]: name, pattern: Pattern.optional(), presence: Presence.default("present") } as {
        [P in K]: T;
      } & { pattern: z.ZodOptional<typeof Pattern>; presence: z.ZodDefault<typeof Presence> },
      { error: "must be an object" },
    )
    .strict();

const checks = <T extends z.ZodType>(item: T) =>
  z
    .array(item, { error: "must be an array" })
    .max(MAX_PREDICATE_CHECKS, `at most ${MAX_PREDICATE_CHECKS} checks`);

const Method = z
  .string({ error: `must be one of ${RULE_METHODS.join(", ")}` })
  .transform((method) => method.toUpperCase())
  .pipe(z.enum(RULE_METHODS, { error: `must be one of ${RULE_METHODS.join(", ")}` }))
  // Any case is accepted; the document lists the upper-case names it stores.
  .meta({ enum: [...RULE_METHODS] });

export const PredicateMethods = z
  .array(Method, { error: "must be an array of HTTP methods" })
  .max(RULE_METHODS.length, `at most ${RULE_METHODS.length} methods`)
  .transform((methods) => [...new Set(methods)]);

export const PathPredicate = z
  .object({ pattern: Pattern, presence: Presence.default("present") }, { error: "must be an object" })
  .strict();

export const HeaderPredicate = check("name", HeaderName);
export const QueryPredicate = check("name", Name);
export const BodyPredicate = check("path", DotPath);
export const TokenPredicate = check("claim", Name);

export const Variable = z
  .object(
    {
      name: z
        .string({ error: "must be a string" })
        .max(MAX_VARIABLE_NAME_LENGTH, `at most ${MAX_VARIABLE_NAME_LENGTH} characters`)
        .regex(VARIABLE_NAME, "must start with a letter or _ and hold only letters, digits, _ and -"),
      source: z.enum(VARIABLE_SOURCES, { error: `must be one of ${VARIABLE_SOURCES.join(", ")}` }),
      key: Name,
    },
    { error: "must be an object" },
  )
  .strict()
  .superRefine((variable, ctx) => {
    if (variable.source === "path" && !/^(0|[1-9][0-9]{0,2})$/.test(variable.key))
      ctx.addIssue({
        code: "custom",
        path: ["key"],
        message: "must be a path segment index (0 is the first segment after /api/{proxyId})",
      });
    if (variable.source === "body" && !DOT_PATH.test(variable.key))
      ctx.addIssue({ code: "custom", path: ["key"], message: "must be a dot path such as items.0.id" });
    if (variable.source === "header" && !HEADER_NAME.test(variable.key))
      ctx.addIssue({ code: "custom", path: ["key"], message: "must be a valid HTTP header name" });
  });

export const Variables = z
  .array(Variable, { error: "must be an array" })
  .max(MAX_VARIABLES, `at most ${MAX_VARIABLES} variables`)
  .superRefine((variables, ctx) => {
    const seen = new Set<string>();
    variables.forEach((variable, index) => {
      if (seen.has(variable.name))
        ctx.addIssue({ code: "custom", path: [index, "name"], message: "is bound twice" });
      seen.add(variable.name);
    });
  });

/**
 * The predicate fields of a meter or transform, each optional (null clears it on a PUT: the
 * entity schemas decide). Spread into the entity's body schema.
 */
export const PredicateFields = {
  methods: PredicateMethods,
  path: PathPredicate,
  query: checks(QueryPredicate),
  headers: checks(HeaderPredicate),
  body: checks(BodyPredicate),
  token: checks(TokenPredicate),
  variables: Variables,
} as const;

export type PathPredicateValue = z.infer<typeof PathPredicate>;
export type HeaderPredicateValue = z.infer<typeof HeaderPredicate>;
export type QueryPredicateValue = z.infer<typeof QueryPredicate>;
export type BodyPredicateValue = z.infer<typeof BodyPredicate>;
export type TokenPredicateValue = z.infer<typeof TokenPredicate>;
export type VariableValue = z.infer<typeof Variable>;

/** The stored predicate set: every field present, null or [] when unset. */
export interface StoredPredicates {
  methods: string[];
  path: PathPredicateValue | null;
  query: QueryPredicateValue[];
  headers: HeaderPredicateValue[];
  body: BodyPredicateValue[];
  token: TokenPredicateValue[];
  variables: VariableValue[];
}
