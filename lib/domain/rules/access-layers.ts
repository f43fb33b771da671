/**
 * The part of the access decision (rule-evaluator.ts) that needs no rule: the layers' order, a
 * layer's default effect and how the layers' decisions combine. A request whose credential, proxy
 * and target have no rule is decided here alone, so the data plane loads the rule evaluator
 * (rule-evaluator.ts, with the predicate matching it shares with meters) only for a configuration
 * that has rules (`loadRuleEvaluator`), not at a cold start (docs/performance.md).
 */

import type { FieldCheck } from "#lib/domain/predicates/evaluate.ts";
import { loadOnce } from "#lib/lazy.ts";

export type RuleLayerName = "credential" | "proxy" | "target";

/** A rule compiled by rule-evaluator.ts compileRules. */
export interface CompiledRule {
  ruleId: string;
  effect: "allow" | "deny";
  /** Upper case; null when every method matches. */
  methods: ReadonlySet<string> | null;
  /** Checks without a pattern (cheap) first, then the path, then pattern checks. */
  checks: FieldCheck[];
  /** Set when a stored pattern no longer compiles: the rule then denies (fail closed). */
  invalid: string | null;
}

/** One parent's rules, sorted and compiled: build once per configuration load with compileRules. */
export class CompiledRules {
  readonly rules: readonly CompiledRule[];
  /** Sum of the pattern costs (instructions) of these rules. */
  readonly cost: number;

  constructor(rules: readonly CompiledRule[], cost: number) {
    this.rules = rules;
    this.cost = cost;
  }
}

/** A parent without rules, compiled. */
export const NO_RULES = new CompiledRules([], 0);

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

export const LAYER_TEXT: Record<RuleLayerName, { of: string; owner: string }> = {
  credential: { of: "the proxy credential", owner: "the proxy credential's" },
  proxy: { of: "the proxy", owner: "the proxy's" },
  target: { of: "the target", owner: "the target's" },
};

interface NamedLayer {
  name: RuleLayerName;
  defaultEffect: "allow" | "deny";
}

/** The decision of a layer where no rule decided. */
export function defaultEffectDecision(layer: NamedLayer): LayerDecision {
  const verb = layer.defaultEffect === "deny" ? "denied" : "allowed";
  return {
    effect: layer.defaultEffect,
    ruleId: null,
    reason: `${verb} by ${LAYER_TEXT[layer.name].owner} default effect`,
  };
}

/**
 * Allowed only if every layer allows. Layers are decided in the order credential, proxy, target
 * (whatever their order in the array); the first layer that denies is reported.
 */
export function combineLayers<Layer extends NamedLayer>(
  layers: readonly Layer[],
  decide: (layer: Layer) => LayerDecision,
): AccessDecision {
  const ordered = [...layers].sort(
    (a, b) => RULE_LAYER_ORDER.indexOf(a.name) - RULE_LAYER_ORDER.indexOf(b.name),
  );
  const reasons: string[] = [];
  for (const layer of ordered) {
    const decision = decide(layer);
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

/** Whether any layer has a compiled rule (otherwise `decideByDefaultEffects` decides). */
export const layersHaveRules = (layers: readonly { rules: CompiledRules }[]): boolean =>
  layers.some((layer) => layer.rules.rules.length > 0);

/** The access decision of layers without rules: each layer's default effect. */
export const decideByDefaultEffects = (layers: readonly NamedLayer[]): AccessDecision =>
  combineLayers(layers, defaultEffectDecision);

/** rule-evaluator.ts, loaded on demand once per instance. */
export const loadRuleEvaluator = loadOnce(() => import("./rule-evaluator.ts"));
