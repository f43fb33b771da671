/**
 * Access rules (spec 2.8, 4.8): the create body and the canonical condition shape that is stored,
 * returned by the API and evaluated by the data plane (rule-evaluator.ts).
 *
 * The path check is accepted in two forms, flat (`pathPattern`, `pathPresence`) and nested
 * (`path: {pattern, presence}`), never both; the stored shape carries both (mirrors). Every pattern
 * is compiled with the rule's flags at validation time, so a stored rule always compiles.
 */
import { z } from "zod";
import { parseInput } from "#lib/shared/parse-input.ts";
import { MAX_PATTERN_LENGTH, regexFlagsProblem, rulePatternProblem } from "./regex.ts";
// Validation compiles patterns synchronously: re2js is installed at start here (not in the data plane).
import "./regex-eager.ts";
import {
  RULE_EFFECTS,
  RULE_METHODS,
  RULE_PRESENCES,
  type RuleEffect,
  type RulePresence,
} from "#lib/shared/rule-constants.ts";

export {
  RULE_EFFECTS,
  RULE_METHODS,
  RULE_PRESENCES,
  type RuleEffect,
  type RuleMethod,
  type RulePresence,
} from "#lib/shared/rule-constants.ts";
export const MIN_RULE_PRIORITY = 0;
export const MAX_RULE_PRIORITY = 1000;
/**
 * Most header checks, and most query checks, of one rule (as before issue 7: the matching budget
 * per request, rule-evaluator.ts, bounds the work, whatever the number of checks).
 */
export const MAX_HEADER_CHECKS = 20;
export const MAX_QUERY_CHECKS = 20;
/**
 * Most pattern cost (compiled instructions, regex.ts patternCost) of all the rules of one parent:
 * with the matched value bound, this bounds the matching work a parent's rules cost per request.
 */
export const MAX_RULE_PATTERN_COST = 2000;
export const MAX_CHECK_NAME_LENGTH = 256;
export const MAX_RULE_NOTES_LENGTH = 1000;

/** RFC 9110 token: the characters a header name may contain. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

const Effect = z.enum(RULE_EFFECTS, { error: "must be allow or deny" });
const Presence = z.enum(RULE_PRESENCES, { error: "must be present or absent" });
const Pattern = z
  .string({ error: "must be a string" })
  .min(1, "must not be empty")
  .max(MAX_PATTERN_LENGTH, `at most ${MAX_PATTERN_LENGTH} characters`);

const Priority = z
  .number({ error: `must be an integer from ${MIN_RULE_PRIORITY} to ${MAX_RULE_PRIORITY}` })
  .int(`must be an integer from ${MIN_RULE_PRIORITY} to ${MAX_RULE_PRIORITY}`)
  .min(MIN_RULE_PRIORITY, `must be an integer from ${MIN_RULE_PRIORITY} to ${MAX_RULE_PRIORITY}`)
  .max(MAX_RULE_PRIORITY, `must be an integer from ${MIN_RULE_PRIORITY} to ${MAX_RULE_PRIORITY}`);

const Method = z
  .string({ error: `must be one of ${RULE_METHODS.join(", ")}` })
  .transform((method) => method.toUpperCase())
  .pipe(z.enum(RULE_METHODS, { error: `must be one of ${RULE_METHODS.join(", ")}` }))
  // Any case is accepted; the document lists the upper-case names it stores.
  .meta({ enum: [...RULE_METHODS] });

const Methods = z
  .array(Method, { error: "must be an array of HTTP methods" })
  .min(1, "at least one method (omit the field to match every method)")
  .max(RULE_METHODS.length, `at most ${RULE_METHODS.length} methods`)
  .transform((methods) => [...new Set(methods)]);

const PathCheck = z
  .object({ pattern: Pattern, presence: Presence.default("present") }, { error: "must be an object" })
  .strict();

const HeaderCheck = z
  .object(
    {
      name: z
        .string({ error: "must be a string" })
        .min(1, "must not be empty")
        .max(MAX_CHECK_NAME_LENGTH, `at most ${MAX_CHECK_NAME_LENGTH} characters`)
        .regex(HEADER_NAME, "must be a valid HTTP header name")
        .transform((name) => name.toLowerCase()),
      pattern: Pattern.optional(),
      presence: Presence.default("present"),
    },
    { error: "must be an object" },
  )
  .strict();

const QueryCheck = z
  .object(
    {
      name: z
        .string({ error: "must be a string" })
        .min(1, "must not be empty")
        .max(MAX_CHECK_NAME_LENGTH, `at most ${MAX_CHECK_NAME_LENGTH} characters`),
      pattern: Pattern.optional(),
      presence: Presence.default("present"),
    },
    { error: "must be an object" },
  )
  .strict();

const checks = <T extends z.ZodType>(check: T, max: number) =>
  z.array(check, { error: "must be an array" }).max(max, `at most ${max} checks`);

const RegexFlags = z.string({ error: "must be a string" }).superRefine((flags, ctx) => {
  const problem = regexFlagsProblem(flags);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Cross-field checks: one path form only, and every pattern compiles with the rule's flags.
 * Runs even when other fields failed (so that one 400 names every failing field); the value may
 * then be partly unparsed, hence the defensive reads.
 */
function checkRule(value: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const flags =
    typeof value.regexFlags === "string" && regexFlagsProblem(value.regexFlags) === null
      ? value.regexFlags
      : "";

  const flat = value.pathPattern !== undefined || value.pathPresence !== undefined;
  if (value.path !== undefined && flat) {
    ctx.addIssue({
      code: "custom",
      path: ["path"],
      message: "give the path check either as path or as pathPattern/pathPresence, not both",
    });
  } else if (value.pathPresence !== undefined && value.pathPattern === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["pathPattern"],
      message: "is required when pathPresence is given",
    });
  }

  const compiles = (pattern: unknown, path: (string | number)[]) => {
    if (typeof pattern !== "string" || pattern.length === 0 || pattern.length > MAX_PATTERN_LENGTH) return;
    const problem = rulePatternProblem(pattern, flags);
    if (problem)
      ctx.addIssue({ code: "custom", path, message: `is not a valid regular expression: ${problem}` });
  };
  compiles(value.pathPattern, ["pathPattern"]);
  if (isRecord(value.path)) compiles(value.path.pattern, ["path", "pattern"]);
  for (const list of ["headerChecks", "queryChecks"] as const) {
    const items = value[list];
    if (!Array.isArray(items)) continue;
    items.forEach((item: unknown, index) => {
      if (isRecord(item)) compiles(item.pattern, [list, index, "pattern"]);
    });
  }
}

/** POST .../rules body (spec 4.8). Unknown fields are rejected. */
export const CreateRuleBody = z
  .object({
    effect: Effect,
    priority: Priority,
    methods: Methods.optional(),
    pathPattern: Pattern.optional(),
    pathPresence: Presence.optional(),
    path: PathCheck.optional(),
    headerChecks: checks(HeaderCheck, MAX_HEADER_CHECKS).optional(),
    queryChecks: checks(QueryCheck, MAX_QUERY_CHECKS).optional(),
    regexFlags: RegexFlags.optional(),
    notes: z
      .string({ error: "must be a string" })
      .trim()
      .max(MAX_RULE_NOTES_LENGTH, `at most ${MAX_RULE_NOTES_LENGTH} characters`)
      .optional(),
  })
  .strict()
  .superRefine((value, ctx) => checkRule(value as Record<string, unknown>, ctx), {
    when: (payload) => isRecord(payload.value),
  });

export type CreateRuleInput = z.infer<typeof CreateRuleBody>;

/** One header or query parameter check, as stored. */
export interface RuleCheck {
  name: string;
  pattern: string | null;
  presence: RulePresence;
}

/** The path check, as stored. */
export interface RulePathCheck {
  pattern: string;
  presence: RulePresence;
}

/** The canonical conditions of a rule: stored, returned by the API and evaluated by the data plane. */
export interface StoredRuleConditions {
  effect: RuleEffect;
  priority: number;
  /** Upper case; empty means every method. */
  methods: string[];
  path: RulePathCheck | null;
  /** Mirror of path.pattern (null when there is no path check). */
  pathPattern: string | null;
  /** Mirror of path.presence (null when there is no path check). */
  pathPresence: RulePresence | null;
  /** Header names are lower case. */
  headerChecks: RuleCheck[];
  queryChecks: RuleCheck[];
  regexFlags: string;
  notes: string;
}

/** The canonical shape of validated input; both path forms become `path` plus its flat mirrors. */
export function normaliseRule(input: CreateRuleInput): StoredRuleConditions {
  const path: RulePathCheck | null = input.path
    ? { pattern: input.path.pattern, presence: input.path.presence }
    : input.pathPattern !== undefined
      ? { pattern: input.pathPattern, presence: input.pathPresence ?? "present" }
      : null;
  const check = (c: { name: string; pattern?: string | undefined; presence: RulePresence }): RuleCheck => ({
    name: c.name,
    pattern: c.pattern ?? null,
    presence: c.presence,
  });
  return {
    effect: input.effect,
    priority: input.priority,
    methods: input.methods ?? [],
    path,
    pathPattern: path?.pattern ?? null,
    pathPresence: path?.presence ?? null,
    headerChecks: (input.headerChecks ?? []).map(check),
    queryChecks: (input.queryChecks ?? []).map(check),
    regexFlags: input.regexFlags ?? "",
    notes: input.notes ?? "",
  };
}

/** Validate a create body (400 naming every failing field) and return the canonical conditions. */
export function parseCreateRule(body: unknown): StoredRuleConditions {
  return normaliseRule(parseInput(CreateRuleBody, body));
}
