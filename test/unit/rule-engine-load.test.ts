/**
 * re2js is loaded on demand (lib/domain/rules/regex.ts): this file imports only the regex module and
 * the evaluator, not the rule schema that installs re2js at start, as the data plane does.
 */
import { describe, expect, it } from "vitest";
import {
  compileRulePattern,
  loadRuleEngine,
  RuleEngineNotLoadedError,
  ruleEngineLoaded,
  testPattern,
} from "#lib/domain/rules/regex.ts";
import { compileRules } from "#lib/domain/rules/rule-evaluator.ts";

describe("rule engine loaded on demand", () => {
  it("refuses to compile before loadRuleEngine, then compiles", async () => {
    expect(ruleEngineLoaded()).toBe(false);
    expect(() => compileRulePattern("^/admin", "")).toThrow(RuleEngineNotLoadedError);
    // Rules without patterns need no engine.
    expect(compileRules([]).rules).toHaveLength(0);
    await Promise.all([loadRuleEngine(), loadRuleEngine()]);
    expect(ruleEngineLoaded()).toBe(true);
    expect(testPattern(compileRulePattern("^/admin", "i"), "/ADMIN/x")).toBe(true);
  });
});
