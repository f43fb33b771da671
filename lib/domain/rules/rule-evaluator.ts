/**
 * The access decision of the data plane (spec 4.8), taken before the target is called. Pure: the
 * caller loads the rules and default effects of the proxy credential, the proxy and the target.
 *
 * In a layer, rules are tried by priority (highest first; on a tie `deny` before `allow`, then by
 * ruleId); the first rule whose conditions all hold decides, else the layer's default effect. The
 * request is allowed only if every layer allows, in the order credential, proxy, target.
 * See docs/access-rules.md.
 *
 * Several values (a repeated query parameter, header lines joined with commas): a `deny` rule's
 * check holds when any value matches, an `allow` rule's only when every value matches
 * (lib/domain/request-view.ts checkOutcome, shared with the predicates of meters and transforms).
 *
 * Bounded work (docs/access-rules.md, "Limits"): rules are compiled once per configuration load
 * (compileRules; the data plane caches the result with the proxy's configuration), each distinct
 * (pattern, header/parameter/path) pair is matched at most once per request, and only values of at
 * most MAX_MATCHED_VALUE_LENGTH characters (MAX_MATCHED_VALUES values per name) are matched. A
 * longer value is never scanned: a check on it is undecided and is settled against the caller
 * (a `deny` rule holds, an `allow` rule does not), so padding a value can never bypass a rule.
 */
import type { RE2JS } from "re2js";
import {
  type FieldCheck,
  fieldCheckOutcome,
  PreparedPredicateRequest,
} from "#lib/domain/predicates/evaluate.ts";
import { MAX_MATCHED_VALUE_LENGTH, MAX_MATCHED_VALUES } from "#lib/domain/request-view.ts";
import {
  type AccessDecision,
  type CompiledRule,
  CompiledRules,
  combineLayers,
  defaultEffectDecision,
  LAYER_TEXT,
  type LayerDecision,
  type RuleLayerName,
} from "./access-layers.ts";
import {
  compileRulePattern,
  type EvaluationStats,
  newEvaluationStats,
  patternCost,
  RulePatternError,
} from "./regex.ts";
import type { StoredRuleConditions } from "./rule-schema.ts";

export { MAX_MATCHED_VALUE_LENGTH, MAX_MATCHED_VALUES };
/**
 * Matching work one request may spend on all its rules, in pattern instructions x characters
 * (the bound on the regex engine's steps). Measured on the slowest patterns the instruction cap
 * admits, a unit costs at most about 40 ns of CPU, so this keeps the decision within about 5 ms
 * whatever the rules and the request (bench/rule-cost.ts). A match that would go over it is not
 * run: its check is undecided and settled against the caller, like an over-long value.
 */
export const MAX_RULE_WORK_PER_REQUEST = 125_000;

export interface RuleRequest {
  method: string;
  /** The path after the proxy id, starting with `/`, without the query string. */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  query: Record<string, string | string[] | undefined>;
}

export interface EvaluableRule extends StoredRuleConditions {
  ruleId: string;
}

export { RULE_LAYER_ORDER } from "./access-layers.ts";
export type { AccessDecision, LayerDecision, RuleLayerName };
export { CompiledRules };

/** A compiled pattern (the same RE2JS object for the same pattern and flags: results are shared). */
interface CompiledPattern {
  regex: RE2JS;
  cost: number;
}

export interface RuleLayer {
  name: RuleLayerName;
  defaultEffect: "allow" | "deny";
  /** Stored rules (compiled on each call) or, on the data plane's hot path, compiled ones. */
  rules: readonly EvaluableRule[] | CompiledRules;
}

export type { EvaluationStats } from "./regex.ts";
export { newEvaluationStats };

/** Highest priority first; on a tie deny before allow; then by ruleId (code-unit order). */
export function compareRules(a: EvaluableRule, b: EvaluableRule): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.effect !== b.effect) return a.effect === "deny" ? -1 : 1;
  return a.ruleId < b.ruleId ? -1 : a.ruleId > b.ruleId ? 1 : 0;
}

/** Compile one parent's rules (sorted, every pattern compiled once). Never throws. */
export function compileRules(rules: readonly EvaluableRule[]): CompiledRules {
  let total = 0;
  const compile = (pattern: string, flags: string): CompiledPattern => {
    const regex = compileRulePattern(pattern, flags);
    const cost = patternCost(regex);
    total += cost;
    return { regex, cost };
  };
  const compiled = [...rules].sort(compareRules).map((rule): CompiledRule => {
    const flags = rule.regexFlags ?? "";
    const methods =
      rule.methods && rule.methods.length > 0 ? new Set(rule.methods.map((m) => m.toUpperCase())) : null;
    try {
      const path =
        rule.path ??
        (rule.pathPattern ? { pattern: rule.pathPattern, presence: rule.pathPresence ?? "present" } : null);
      const named = [
        ...(rule.headerChecks ?? []).map((c) => ({ ...c, field: `h:${c.name.toLowerCase()}` })),
        ...(rule.queryChecks ?? []).map((c) => ({ ...c, field: `q:${c.name}` })),
      ];
      const checks: FieldCheck[] = [
        ...named
          .filter((c) => c.pattern === null || c.pattern === undefined)
          .map((c) => ({ field: c.field, pattern: null, presence: c.presence })),
        ...(path ? [{ field: "path", pattern: compile(path.pattern, flags), presence: path.presence }] : []),
        ...named
          .filter((c) => typeof c.pattern === "string")
          .map((c) => ({
            field: c.field,
            pattern: compile(c.pattern as string, flags),
            presence: c.presence,
          })),
      ];
      return { ruleId: rule.ruleId, effect: rule.effect, methods, checks, invalid: null };
    } catch (error) {
      if (!(error instanceof RulePatternError)) throw error;
      // A stored pattern that no longer compiles: the rule fails closed when reached.
      return { ruleId: rule.ruleId, effect: rule.effect, methods, checks: [], invalid: error.reason };
    }
  });
  return new CompiledRules(compiled, total);
}

/** A request indexed for evaluation, with the per-request memo of pattern results and work budget. */
type PreparedRequest = PreparedPredicateRequest;
const prepare = (request: RuleRequest, stats = newEvaluationStats()): PreparedRequest =>
  new PreparedPredicateRequest(request, stats, MAX_RULE_WORK_PER_REQUEST);

/** true / false, or undefined when a value it tests is too long to be matched. */
type Outcome = boolean | undefined;

/** Whether every condition holds; undefined if none fails but one could not be decided. */
function ruleOutcome(rule: CompiledRule, request: PreparedRequest): Outcome {
  if (rule.methods && !rule.methods.has(request.method)) return false;
  let outcome: Outcome = true;
  for (const check of rule.checks) {
    // A deny rule's checks err on the side of holding (any value), an allow rule's on failing
    // (every value): request-view.ts checkOutcome.
    const result = fieldCheckOutcome(check, request, rule.effect === "deny");
    if (result === false) return false;
    if (result === undefined) outcome = undefined;
  }
  return outcome;
}

const compiledOf = (rules: RuleLayer["rules"]): CompiledRules =>
  rules instanceof CompiledRules ? rules : compileRules(rules);

function evaluatePrepared(layer: RuleLayer, request: PreparedRequest): LayerDecision {
  const text = LAYER_TEXT[layer.name];
  for (const rule of compiledOf(layer.rules).rules) {
    if (rule.invalid !== null) {
      if (rule.methods && !rule.methods.has(request.method)) continue;
      return {
        effect: "deny",
        ruleId: rule.ruleId,
        reason: `denied: rule ${rule.ruleId} of ${text.of} has an invalid pattern (${rule.invalid})`,
      };
    }
    const outcome = ruleOutcome(rule, request);
    if (outcome === true) {
      const verb = rule.effect === "deny" ? "denied" : "allowed";
      return {
        effect: rule.effect,
        ruleId: rule.ruleId,
        reason: `${verb} by rule ${rule.ruleId} of ${text.of}`,
      };
    }
    if (outcome === undefined && rule.effect === "deny") {
      // Undecided because a tested value is too long: settled against the caller.
      return {
        effect: "deny",
        ruleId: rule.ruleId,
        reason: `denied by rule ${rule.ruleId} of ${text.of} (a value it tests is longer than ${MAX_MATCHED_VALUE_LENGTH} characters, has more than ${MAX_MATCHED_VALUES} values, or the request's rules would need more matching than allowed)`,
      };
    }
    // false, or undecided for an allow rule: the rule does not apply.
  }
  return defaultEffectDecision(layer);
}

/**
 * True if every condition of the rule holds for the request (a rule without conditions matches
 * every request). Throws RulePatternError if a stored pattern does not compile. A condition on a
 * value too long to be matched counts as holding for a deny rule and not holding for an allow rule.
 */
export function ruleMatches(rule: EvaluableRule | StoredRuleConditions, request: RuleRequest): boolean {
  const evaluable = { ruleId: "ruleId" in rule ? rule.ruleId : "", ...rule } as EvaluableRule;
  const [compiled] = compileRules([evaluable]).rules;
  if (!compiled) return false;
  if (compiled.invalid !== null) throw new RulePatternError("", evaluable.regexFlags ?? "", compiled.invalid);
  const outcome = ruleOutcome(compiled, prepare(request));
  return outcome === undefined ? compiled.effect === "deny" : outcome;
}

/** The decision of one layer: the first matching rule, else the layer's default effect. */
export function evaluateLayer(layer: RuleLayer, request: RuleRequest): LayerDecision {
  return evaluatePrepared(layer, prepare(request));
}

/**
 * Allowed only if every layer allows. Layers are evaluated in the order credential, proxy, target
 * (whatever their order in the array); the first layer that denies is reported. `stats`, when
 * given, accumulates the matching work done.
 */
export function evaluateAccess(
  layers: readonly RuleLayer[],
  request: RuleRequest,
  stats: EvaluationStats = newEvaluationStats(),
): AccessDecision {
  const prepared = prepare(request, stats);
  return combineLayers(layers, (layer) => evaluatePrepared(layer, prepared));
}
