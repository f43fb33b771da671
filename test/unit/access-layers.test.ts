/**
 * lib/domain/rules/access-layers.ts: the data plane decides a request whose layers have no rule
 * without loading the rule evaluator; that decision must be the evaluator's own.
 */
import { describe, expect, it } from "vitest";
import {
  decideByDefaultEffects,
  layersHaveRules,
  loadRuleEvaluator,
  NO_RULES,
  type RuleLayerName,
} from "#lib/domain/rules/access-layers.ts";
import { compileRules, evaluateAccess } from "#lib/domain/rules/rule-evaluator.ts";
import { parseCreateRule } from "#lib/domain/rules/rule-schema.ts";

const REQUEST = { method: "GET", path: "/items", headers: {}, query: {} };
const NAMES: RuleLayerName[] = ["target", "credential", "proxy"]; // out of order on purpose

describe("access layers without rules", () => {
  it("decide every combination of default effects as the rule evaluator does", () => {
    for (let mask = 0; mask < 8; mask++) {
      const layers = NAMES.map((name, i) => ({
        name,
        defaultEffect: mask & (1 << i) ? ("deny" as const) : ("allow" as const),
        rules: NO_RULES,
      }));
      expect(layersHaveRules(layers)).toBe(false);
      expect(decideByDefaultEffects(layers)).toEqual(evaluateAccess(layers, REQUEST));
    }
    const denied = decideByDefaultEffects([
      { name: "target", defaultEffect: "deny" },
      { name: "proxy", defaultEffect: "deny" },
    ]);
    expect(denied).toEqual({
      allowed: false,
      layer: "proxy",
      ruleId: null,
      effect: "deny",
      reason: "denied by the proxy's default effect",
    });
  });

  it("see a compiled rule, and load the evaluator that compiled it", async () => {
    const rules = compileRules([
      { ruleId: "r1", ...parseCreateRule({ effect: "deny", priority: 1, methods: ["DELETE"] }) },
    ]);
    expect(layersHaveRules([{ rules: NO_RULES }, { rules }])).toBe(true);
    const evaluator = await loadRuleEvaluator();
    expect(evaluator.compileRules).toBe(compileRules);
    expect(await loadRuleEvaluator()).toBe(evaluator);
    expect(rules).toBeInstanceOf((await import("#lib/domain/rules/access-layers.ts")).CompiledRules);
  });
});
