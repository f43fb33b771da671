/**
 * The access decision of the data plane (spec 4.8), taken before the target is called. Pure: the
 * caller loads the rules and default effects of the proxy credential, the proxy and the target.
 *
 * In a layer, rules are tried by priority (highest first; on a tie `deny` before `allow`, then by
 * ruleId); the first rule whose conditions all hold decides, else the layer's default effect. The
 * request is allowed only if every layer allows, in the order credential, proxy, target.
 * See docs/access-rules.md.
 */
import { compileRulePattern, RulePatternError, testPattern } from "./regex.ts";
import type { RuleCheck, StoredRuleConditions } from "./rule-schema.ts";

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

export type RuleLayerName = "credential" | "proxy" | "target";

export interface RuleLayer {
  name: RuleLayerName;
  defaultEffect: "allow" | "deny";
  rules: readonly EvaluableRule[];
}

export interface LayerDecision {
  effect: "allow" | "deny";
  /** The deciding rule, or null when the layer's default effect applied. */
  ruleId: string | null;
  reason: string;
}

export interface AccessDecision {
  allowed: boolean;
  /** The first layer that denied (null when allowed). */
  layer: RuleLayerName | null;
  /** The rule that denied (null when allowed or when a layer's default effect denied). */
  ruleId: string | null;
  effect: "allow" | "deny";
  reason: string;
}

/** The order in which layers are evaluated. */
export const RULE_LAYER_ORDER: readonly RuleLayerName[] = ["credential", "proxy", "target"];

function valuesOf(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [value];
}

/** Values by name; header names are folded to lower case, query names are kept as they are. */
function indexValues(
  record: Record<string, string | string[] | undefined>,
  foldCase: boolean,
): Map<string, string[]> {
  const index = new Map<string, string[]>();
  for (const [name, value] of Object.entries(record)) {
    const values = valuesOf(value);
    if (values.length === 0) continue; // undefined or [] : the header/parameter is missing
    const key = foldCase ? name.toLowerCase() : name;
    const existing = index.get(key);
    if (existing) existing.push(...values);
    else index.set(key, values);
  }
  return index;
}

interface PreparedRequest {
  method: string;
  path: string;
  headers: Map<string, string[]>;
  query: Map<string, string[]>;
}

function prepare(request: RuleRequest): PreparedRequest {
  const queryStart = request.path.indexOf("?");
  const path = queryStart === -1 ? request.path : request.path.slice(0, queryStart);
  return {
    method: request.method.toUpperCase(),
    path,
    headers: indexValues(request.headers ?? {}, true),
    query: indexValues(request.query ?? {}, false),
  };
}

function checkHolds(check: RuleCheck, values: string[] | undefined, flags: string): boolean {
  const present = values !== undefined;
  if (check.pattern === null || check.pattern === undefined) {
    return check.presence === "present" ? present : !present;
  }
  const compiled = compileRulePattern(check.pattern, flags);
  const matched = (values ?? []).some((value) => testPattern(compiled, value));
  return check.presence === "present" ? matched : !matched;
}

function matchesPrepared(rule: StoredRuleConditions, request: PreparedRequest): boolean {
  const flags = rule.regexFlags ?? "";
  if (rule.methods && rule.methods.length > 0) {
    if (!rule.methods.some((method) => method.toUpperCase() === request.method)) return false;
  }
  const path =
    rule.path ??
    (rule.pathPattern ? { pattern: rule.pathPattern, presence: rule.pathPresence ?? "present" } : null);
  if (path) {
    const found = testPattern(compileRulePattern(path.pattern, flags), request.path);
    if (found !== (path.presence === "present")) return false;
  }
  for (const check of rule.headerChecks ?? []) {
    if (!checkHolds(check, request.headers.get(check.name.toLowerCase()), flags)) return false;
  }
  for (const check of rule.queryChecks ?? []) {
    if (!checkHolds(check, request.query.get(check.name), flags)) return false;
  }
  return true;
}

/**
 * True if every condition of the rule holds for the request (a rule without conditions matches
 * every request). Throws RulePatternError if a stored pattern does not compile.
 */
export function ruleMatches(rule: StoredRuleConditions, request: RuleRequest): boolean {
  return matchesPrepared(rule, prepare(request));
}

/** Highest priority first; on a tie deny before allow; then by ruleId (code-unit order). */
export function compareRules(a: EvaluableRule, b: EvaluableRule): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.effect !== b.effect) return a.effect === "deny" ? -1 : 1;
  return a.ruleId < b.ruleId ? -1 : a.ruleId > b.ruleId ? 1 : 0;
}

const LAYER_TEXT: Record<RuleLayerName, { of: string; owner: string }> = {
  credential: { of: "the proxy credential", owner: "the proxy credential's" },
  proxy: { of: "the proxy", owner: "the proxy's" },
  target: { of: "the target", owner: "the target's" },
};

function evaluatePrepared(layer: RuleLayer, request: PreparedRequest): LayerDecision {
  const text = LAYER_TEXT[layer.name];
  for (const rule of [...layer.rules].sort(compareRules)) {
    let matched: boolean;
    try {
      matched = matchesPrepared(rule, request);
    } catch (error) {
      // A stored pattern that no longer compiles: fail closed.
      if (error instanceof RulePatternError) {
        return {
          effect: "deny",
          ruleId: rule.ruleId,
          reason: `denied: rule ${rule.ruleId} of ${text.of} has an invalid pattern (${error.reason})`,
        };
      }
      throw error;
    }
    if (matched) {
      const verb = rule.effect === "deny" ? "denied" : "allowed";
      return {
        effect: rule.effect,
        ruleId: rule.ruleId,
        reason: `${verb} by rule ${rule.ruleId} of ${text.of}`,
      };
    }
  }
  const verb = layer.defaultEffect === "deny" ? "denied" : "allowed";
  return { effect: layer.defaultEffect, ruleId: null, reason: `${verb} by ${text.owner} default effect` };
}

/** The decision of one layer: the first matching rule, else the layer's default effect. */
export function evaluateLayer(layer: RuleLayer, request: RuleRequest): LayerDecision {
  return evaluatePrepared(layer, prepare(request));
}

/**
 * Allowed only if every layer allows. Layers are evaluated in the order credential, proxy, target
 * (whatever their order in the array); the first layer that denies is reported.
 */
export function evaluateAccess(layers: readonly RuleLayer[], request: RuleRequest): AccessDecision {
  const prepared = prepare(request);
  const ordered = [...layers].sort(
    (a, b) => RULE_LAYER_ORDER.indexOf(a.name) - RULE_LAYER_ORDER.indexOf(b.name),
  );
  const reasons: string[] = [];
  for (const layer of ordered) {
    const decision = evaluatePrepared(layer, prepared);
    if (decision.effect === "deny") {
      return {
        allowed: false,
        layer: layer.name,
        ruleId: decision.ruleId,
        effect: "deny",
        reason: decision.reason,
      };
    }
    reasons.push(decision.reason);
  }
  return {
    allowed: true,
    layer: null,
    ruleId: null,
    effect: "allow",
    reason: reasons.length > 0 ? reasons.join("; ") : "allowed: no rule layer applies",
  };
}
