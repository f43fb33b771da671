/** The data plane's access decision (spec 4.8): order, tie-breaking, defaults, conditions, denial reports. */
import { describe, expect, it } from "vitest";
import { MAX_RULES_PER_PARENT } from "#lib/db/regional.ts";
import { compileRulePattern, patternCost } from "#lib/domain/rules/regex.ts";
import {
  compileRules,
  type EvaluableRule,
  evaluateAccess,
  evaluateLayer,
  MAX_MATCHED_VALUE_LENGTH,
  MAX_MATCHED_VALUES,
  MAX_RULE_WORK_PER_REQUEST,
  newEvaluationStats,
  type RuleLayer,
  type RuleRequest,
  ruleMatches,
} from "#lib/domain/rules/rule-evaluator.ts";
import {
  MAX_HEADER_CHECKS,
  MAX_QUERY_CHECKS,
  MAX_RULE_PATTERN_COST,
  parseCreateRule,
} from "#lib/domain/rules/rule-schema.ts";

/** A rule as the API would store it (validated and normalised). */
function rule(ruleId: string, body: Record<string, unknown>): EvaluableRule {
  return { ruleId, ...parseCreateRule(body) };
}

function request(overrides: Partial<RuleRequest> = {}): RuleRequest {
  return { method: "GET", path: "/v1/items", headers: {}, query: {}, ...overrides };
}

const layer = (
  name: RuleLayer["name"],
  defaultEffect: "allow" | "deny",
  rules: EvaluableRule[] = [],
): RuleLayer => ({ name, defaultEffect, rules });

describe("ruleMatches: conditions", () => {
  it("a rule without conditions matches every request", () => {
    const r = rule("r", { effect: "deny", priority: 1 });
    expect(ruleMatches(r, request())).toBe(true);
    expect(ruleMatches(r, request({ method: "DELETE", path: "/" }))).toBe(true);
  });

  it("methods: request method upper-cased must be listed; empty means all", () => {
    const r = rule("r", { effect: "deny", priority: 1, methods: ["post", "PUT"] });
    expect(ruleMatches(r, request({ method: "post" }))).toBe(true);
    expect(ruleMatches(r, request({ method: "PUT" }))).toBe(true);
    expect(ruleMatches(r, request({ method: "GET" }))).toBe(false);
    expect(ruleMatches(r, request({ method: "HEAD" }))).toBe(false);
  });

  it("path present: pattern found anywhere in the path; absent: not found", () => {
    const present = rule("r", { effect: "deny", priority: 1, pathPattern: "/admin" });
    expect(ruleMatches(present, request({ path: "/v1/admin/users" }))).toBe(true);
    expect(ruleMatches(present, request({ path: "/v1/users" }))).toBe(false);
    const anchored = rule("r", { effect: "deny", priority: 1, path: { pattern: "^/admin" } });
    expect(ruleMatches(anchored, request({ path: "/v1/admin" }))).toBe(false);
    const absent = rule("r", {
      effect: "deny",
      priority: 1,
      path: { pattern: "^/public/", presence: "absent" },
    });
    expect(ruleMatches(absent, request({ path: "/public/x" }))).toBe(false);
    expect(ruleMatches(absent, request({ path: "/private/x" }))).toBe(true);
  });

  it("the path is tested without the query string", () => {
    const r = rule("r", { effect: "deny", priority: 1, pathPattern: "secret" });
    expect(ruleMatches(r, request({ path: "/v1/items?x=secret" }))).toBe(false);
    const end = rule("r", { effect: "deny", priority: 1, pathPattern: "/items$" });
    expect(ruleMatches(end, request({ path: "/v1/items?x=1" }))).toBe(true);
  });

  it("regexFlags i makes every pattern case-insensitive", () => {
    const sensitive = rule("r", { effect: "deny", priority: 1, pathPattern: "/ADMIN" });
    const insensitive = rule("r", { effect: "deny", priority: 1, pathPattern: "/ADMIN", regexFlags: "i" });
    expect(ruleMatches(sensitive, request({ path: "/admin" }))).toBe(false);
    expect(ruleMatches(insensitive, request({ path: "/admin" }))).toBe(true);
    const header = rule("r", {
      effect: "deny",
      priority: 1,
      headerChecks: [{ name: "x-env", pattern: "^PROD$" }],
      regexFlags: "i",
    });
    expect(ruleMatches(header, request({ headers: { "X-Env": "prod" } }))).toBe(true);
  });

  describe("headerChecks", () => {
    const check = (c: Record<string, unknown>) =>
      rule("h", { effect: "deny", priority: 1, headerChecks: [c] });

    it("names are case-insensitive", () => {
      const r = check({ name: "X-Api-Key" });
      expect(ruleMatches(r, request({ headers: { "x-api-key": "k" } }))).toBe(true);
      expect(ruleMatches(r, request({ headers: { "X-API-KEY": "k" } }))).toBe(true);
    });

    it("present without pattern: the header exists (even empty)", () => {
      const r = check({ name: "x-debug" });
      expect(ruleMatches(r, request({ headers: { "x-debug": "" } }))).toBe(true);
      expect(ruleMatches(r, request({ headers: {} }))).toBe(false);
      expect(ruleMatches(r, request({ headers: { "x-debug": undefined } }))).toBe(false);
      expect(ruleMatches(r, request({ headers: { "x-debug": [] } }))).toBe(false);
    });

    it("absent without pattern: the header is missing", () => {
      const r = check({ name: "x-debug", presence: "absent" });
      expect(ruleMatches(r, request({ headers: {} }))).toBe(true);
      expect(ruleMatches(r, request({ headers: { "X-Debug": "1" } }))).toBe(false);
    });

    it("present with pattern: some value matches (arrays value by value)", () => {
      const r = check({ name: "accept", pattern: "^application/xml$" });
      expect(ruleMatches(r, request({ headers: { Accept: "application/xml" } }))).toBe(true);
      expect(ruleMatches(r, request({ headers: { Accept: ["text/html", "application/xml"] } }))).toBe(true);
      expect(ruleMatches(r, request({ headers: { Accept: ["text/html", "text/plain"] } }))).toBe(false);
      expect(ruleMatches(r, request({ headers: {} }))).toBe(false);
    });

    it("absent with pattern (deny): not every value matches; a missing header counts as absent", () => {
      const r = check({ name: "x-env", pattern: "^prod$", presence: "absent" });
      expect(ruleMatches(r, request({ headers: {} }))).toBe(true);
      expect(ruleMatches(r, request({ headers: { "x-env": "test" } }))).toBe(true);
      expect(ruleMatches(r, request({ headers: { "x-env": "prod" } }))).toBe(false);
      // "deny unless x-env is prod": one value that is not prod is enough to deny
      expect(ruleMatches(r, request({ headers: { "x-env": ["test", "prod"] } }))).toBe(true);
      expect(ruleMatches(r, request({ headers: { "x-env": ["prod", "test"] } }))).toBe(true);
      expect(ruleMatches(r, request({ headers: { "x-env": "prod,test" } }))).toBe(true);
      expect(ruleMatches(r, request({ headers: { "x-env": ["prod", "prod"] } }))).toBe(false);
    });

    it("an allow rule's checks hold only when every value matches; a deny rule's when any does", () => {
      const allow = rule("a", {
        effect: "allow",
        priority: 1,
        headerChecks: [{ name: "x-role", pattern: "^user$" }],
      });
      const deny = rule("d", {
        effect: "deny",
        priority: 1,
        headerChecks: [{ name: "x-role", pattern: "^admin$" }],
      });
      for (const role of [["user", "admin"], ["admin", "user"], "user,admin", "admin, user"]) {
        expect(ruleMatches(allow, request({ headers: { "x-role": role } })), String(role)).toBe(false);
        expect(ruleMatches(deny, request({ headers: { "x-role": role } })), String(role)).toBe(true);
      }
      expect(ruleMatches(allow, request({ headers: { "x-role": ["user", "user"] } }))).toBe(true);
      expect(ruleMatches(allow, request({ headers: { "x-role": "user, user" } }))).toBe(true);
      // A value that legitimately contains commas still satisfies an allow rule matching it whole.
      const agent = rule("u", {
        effect: "allow",
        priority: 1,
        headerChecks: [{ name: "user-agent", pattern: "^Mozilla/5\\.0 \\(X11, Linux\\)$" }],
      });
      expect(ruleMatches(agent, request({ headers: { "user-agent": "Mozilla/5.0 (X11, Linux)" } }))).toBe(
        true,
      );
      // allow + absent: no value nor element matches
      const notAdmin = rule("n", {
        effect: "allow",
        priority: 1,
        headerChecks: [{ name: "x-role", pattern: "^admin$", presence: "absent" }],
      });
      expect(ruleMatches(notAdmin, request({ headers: { "x-role": "user" } }))).toBe(true);
      expect(ruleMatches(notAdmin, request({ headers: { "x-role": "user,admin" } }))).toBe(false);
      expect(ruleMatches(notAdmin, request({ headers: { "x-role": ["admin", "user"] } }))).toBe(false);
    });

    it("every check must hold", () => {
      const r = rule("h", {
        effect: "deny",
        priority: 1,
        headerChecks: [{ name: "a" }, { name: "b", presence: "absent" }],
      });
      expect(ruleMatches(r, request({ headers: { a: "1" } }))).toBe(true);
      expect(ruleMatches(r, request({ headers: { a: "1", b: "2" } }))).toBe(false);
    });
  });

  describe("queryChecks", () => {
    const check = (c: Record<string, unknown>) =>
      rule("q", { effect: "deny", priority: 1, queryChecks: [c] });

    it("names are case-sensitive", () => {
      const r = check({ name: "token" });
      expect(ruleMatches(r, request({ query: { token: "t" } }))).toBe(true);
      expect(ruleMatches(r, request({ query: { Token: "t" } }))).toBe(false);
    });

    it("presence semantics as for headers, arrays value by value", () => {
      expect(ruleMatches(check({ name: "flag" }), request({ query: { flag: "" } }))).toBe(true);
      expect(ruleMatches(check({ name: "flag", presence: "absent" }), request({ query: {} }))).toBe(true);
      expect(
        ruleMatches(check({ name: "flag", presence: "absent" }), request({ query: { flag: "1" } })),
      ).toBe(false);
      const limit = check({ name: "limit", pattern: "^[0-9]{4,}$" });
      expect(ruleMatches(limit, request({ query: { limit: ["10", "5000"] } }))).toBe(true);
      expect(ruleMatches(limit, request({ query: { limit: "10" } }))).toBe(false);
      const notAll = check({ name: "scope", pattern: "^all$", presence: "absent" });
      expect(ruleMatches(notAll, request({ query: {} }))).toBe(true);
      expect(ruleMatches(notAll, request({ query: { scope: ["mine", "all"] } }))).toBe(true);
      expect(ruleMatches(notAll, request({ query: { scope: ["all", "all"] } }))).toBe(false);
      // query values are not split at commas
      expect(ruleMatches(limit, request({ query: { limit: "10,5000" } }))).toBe(false);
    });
  });

  it("all condition kinds together (AND)", () => {
    const r = rule("all", {
      effect: "deny",
      priority: 1,
      methods: ["DELETE"],
      pathPattern: "^/items/",
      headerChecks: [{ name: "x-role", pattern: "^admin$", presence: "absent" }],
      queryChecks: [{ name: "force" }],
    });
    const hit = request({ method: "delete", path: "/items/1", query: { force: "1" } });
    expect(ruleMatches(r, hit)).toBe(true);
    expect(ruleMatches(r, { ...hit, method: "GET" })).toBe(false);
    expect(ruleMatches(r, { ...hit, path: "/other/1" })).toBe(false);
    expect(ruleMatches(r, { ...hit, headers: { "X-Role": "admin" } })).toBe(false);
    expect(ruleMatches(r, { ...hit, query: {} })).toBe(false);
  });

  it("matching is linear time on hostile input", () => {
    const r = rule("redos", { effect: "deny", priority: 1, pathPattern: "(a+)+$", headerChecks: [] });
    const started = performance.now();
    expect(ruleMatches(r, request({ path: `/${"a".repeat(MAX_MATCHED_VALUE_LENGTH - 3)}!` }))).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe("evaluateLayer", () => {
  it("highest priority decides", () => {
    const l = layer("proxy", "allow", [
      rule("low", { effect: "deny", priority: 1 }),
      rule("high", { effect: "allow", priority: 500 }),
    ]);
    expect(evaluateLayer(l, request())).toEqual({
      effect: "allow",
      ruleId: "high",
      reason: "allowed by rule high of the proxy",
    });
  });

  it("the first matching rule decides; non-matching rules are skipped", () => {
    const l = layer("proxy", "allow", [
      rule("admin", { effect: "deny", priority: 900, pathPattern: "^/admin" }),
      rule("reads", { effect: "allow", priority: 100, methods: ["GET"] }),
      rule("rest", { effect: "deny", priority: 0 }),
    ]);
    expect(evaluateLayer(l, request({ path: "/admin/x" })).ruleId).toBe("admin");
    expect(evaluateLayer(l, request({ path: "/items" })).ruleId).toBe("reads");
    expect(evaluateLayer(l, request({ method: "POST", path: "/items" }))).toMatchObject({
      effect: "deny",
      ruleId: "rest",
    });
  });

  it("on equal priority deny comes before allow, whatever the array order", () => {
    const allow = rule("a-allow", { effect: "allow", priority: 50 });
    const deny = rule("z-deny", { effect: "deny", priority: 50 });
    for (const rules of [
      [allow, deny],
      [deny, allow],
    ]) {
      expect(evaluateLayer(layer("target", "allow", rules), request())).toMatchObject({
        effect: "deny",
        ruleId: "z-deny",
      });
    }
  });

  it("on equal priority and effect, the lowest ruleId decides (deterministic)", () => {
    const b = rule("rule-b", { effect: "deny", priority: 7 });
    const a = rule("rule-a", { effect: "deny", priority: 7 });
    expect(evaluateLayer(layer("target", "allow", [b, a]), request()).ruleId).toBe("rule-a");
    expect(evaluateLayer(layer("target", "allow", [a, b]), request()).ruleId).toBe("rule-a");
  });

  it("does not reorder the caller's array", () => {
    const rules = [
      rule("low", { effect: "deny", priority: 1 }),
      rule("high", { effect: "deny", priority: 2 }),
    ];
    evaluateLayer(layer("proxy", "allow", rules), request());
    expect(rules.map((r) => r.ruleId)).toEqual(["low", "high"]);
  });

  it("falls back to the default effect of each layer", () => {
    const none = rule("never", { effect: "deny", priority: 1000, methods: ["DELETE"] });
    expect(evaluateLayer(layer("credential", "deny", [none]), request())).toEqual({
      effect: "deny",
      ruleId: null,
      reason: "denied by the proxy credential's default effect",
    });
    expect(evaluateLayer(layer("proxy", "allow"), request())).toEqual({
      effect: "allow",
      ruleId: null,
      reason: "allowed by the proxy's default effect",
    });
    expect(evaluateLayer(layer("target", "deny"), request())).toEqual({
      effect: "deny",
      ruleId: null,
      reason: "denied by the target's default effect",
    });
  });

  it("fails closed on a stored pattern that does not compile", () => {
    const broken: EvaluableRule = { ...rule("broken", { effect: "allow", priority: 1 }), pathPattern: "(" };
    broken.path = { pattern: "(", presence: "present" };
    const decision = evaluateLayer(layer("proxy", "allow", [broken]), request());
    expect(decision.effect).toBe("deny");
    expect(decision.ruleId).toBe("broken");
  });
});

describe("evaluateAccess", () => {
  const allowAll = (name: RuleLayer["name"]) => layer(name, "allow");

  it("allows only if every layer allows", () => {
    const decision = evaluateAccess(
      [allowAll("credential"), allowAll("proxy"), allowAll("target")],
      request(),
    );
    expect(decision).toMatchObject({ allowed: true, layer: null, ruleId: null, effect: "allow" });
  });

  it("reports the default effect of each layer that denies", () => {
    for (const name of ["credential", "proxy", "target"] as const) {
      const layers = [allowAll("credential"), allowAll("proxy"), allowAll("target")].map((l) =>
        l.name === name ? layer(name, "deny") : l,
      );
      expect(evaluateAccess(layers, request())).toMatchObject({
        allowed: false,
        layer: name,
        ruleId: null,
        effect: "deny",
      });
    }
    expect(
      evaluateAccess([allowAll("credential"), allowAll("proxy"), layer("target", "deny")], request()).reason,
    ).toBe("denied by the target's default effect");
  });

  it("reports the denying rule and its layer", () => {
    const decision = evaluateAccess(
      [
        allowAll("credential"),
        layer("proxy", "allow", [rule("no-admin", { effect: "deny", priority: 10, pathPattern: "^/admin" })]),
        allowAll("target"),
      ],
      request({ path: "/admin/users" }),
    );
    expect(decision).toEqual({
      allowed: false,
      layer: "proxy",
      ruleId: "no-admin",
      effect: "deny",
      reason: "denied by rule no-admin of the proxy",
    });
  });

  it("a rule allowing in one layer does not override a deny in another", () => {
    const decision = evaluateAccess(
      [
        layer("credential", "allow", [rule("cred-allow", { effect: "allow", priority: 1000 })]),
        layer("proxy", "allow"),
        layer("target", "deny"),
      ],
      request(),
    );
    expect(decision).toMatchObject({ allowed: false, layer: "target", ruleId: null });
  });

  it("evaluates credential, then proxy, then target, whatever the array order; the first denial is reported", () => {
    const layers = [
      layer("target", "allow", [rule("t-deny", { effect: "deny", priority: 1 })]),
      layer("proxy", "allow", [rule("p-deny", { effect: "deny", priority: 1 })]),
      layer("credential", "allow", [rule("c-deny", { effect: "deny", priority: 1 })]),
    ];
    expect(evaluateAccess(layers, request())).toMatchObject({ layer: "credential", ruleId: "c-deny" });
    expect(evaluateAccess(layers.slice(0, 2), request())).toMatchObject({ layer: "proxy", ruleId: "p-deny" });
    expect(evaluateAccess(layers.slice(0, 1), request())).toMatchObject({
      layer: "target",
      ruleId: "t-deny",
    });
    expect(evaluateAccess(layers, request()).reason).toBe("denied by rule c-deny of the proxy credential");
  });

  it("a deny-by-default layer can be opened by an allow rule", () => {
    const layers = [
      layer("credential", "allow"),
      layer("proxy", "deny", [rule("reads", { effect: "allow", priority: 5, methods: ["GET", "HEAD"] })]),
      layer("target", "allow"),
    ];
    expect(evaluateAccess(layers, request({ method: "get" })).allowed).toBe(true);
    expect(evaluateAccess(layers, request({ method: "POST" }))).toMatchObject({
      allowed: false,
      layer: "proxy",
      ruleId: null,
      reason: "denied by the proxy's default effect",
    });
  });

  it("with no layers nothing denies", () => {
    expect(evaluateAccess([], request()).allowed).toBe(true);
  });
});

describe("bounded work (issue 7: rules could cost seconds of CPU per request)", () => {
  const padded = (tail: string) => `${"x".repeat(MAX_MATCHED_VALUE_LENGTH)}${tail}`;

  it("the issue's repro: 100 rules x header checks against a 15 KB header scan nothing", () => {
    const rules = Array.from({ length: MAX_RULES_PER_PARENT }, (_, r) =>
      rule(`r${r}`, {
        effect: "allow",
        priority: 1,
        headerChecks: Array.from({ length: MAX_HEADER_CHECKS }, (_, h) => ({
          name: "x-big",
          pattern: `^value-${r}-${h}$`,
        })),
      }),
    );
    const stats = newEvaluationStats();
    const decision = evaluateAccess(
      [layer("proxy", "deny", rules)],
      request({ headers: { "x-big": "v".repeat(15_000) } }),
      stats,
    );
    expect(decision.allowed).toBe(false); // no allow rule can be shown to hold: the default denies
    expect(stats.executions).toBe(0);
    expect(stats.scannedChars).toBe(0);
  });

  it("padding a value past the bound never bypasses a deny rule, nor satisfies an allow rule", () => {
    const denyEvil = rule("deny-evil", {
      effect: "deny",
      priority: 10,
      headerChecks: [{ name: "x-q", pattern: "evil" }],
    });
    const denyUnlessGood = rule("deny-unless-good", {
      effect: "deny",
      priority: 10,
      queryChecks: [{ name: "q", pattern: "^good$", presence: "absent" }],
    });
    const allowNotEvil = rule("allow-not-evil", {
      effect: "allow",
      priority: 10,
      path: { pattern: "evil", presence: "absent" },
    });
    for (const [deny, overLong] of [
      [denyEvil, request({ headers: { "x-q": padded("evil") } })],
      [denyUnlessGood, request({ query: { q: padded("!") } })],
      [denyUnlessGood, request({ query: { q: Array(MAX_MATCHED_VALUES + 1).fill("good") } })],
    ] as const) {
      const decision = evaluateAccess([layer("proxy", "allow", [deny])], overLong);
      expect(decision).toMatchObject({ allowed: false, ruleId: deny.ruleId });
      expect(decision.reason).toContain(`longer than ${MAX_MATCHED_VALUE_LENGTH}`);
    }
    // Within the bound the same rules decide on the values.
    expect(
      evaluateAccess([layer("proxy", "allow", [denyEvil])], request({ headers: { "x-q": "fine" } })).allowed,
    ).toBe(true);
    expect(
      evaluateAccess([layer("proxy", "allow", [denyUnlessGood])], request({ query: { q: "good" } })).allowed,
    ).toBe(true);
    // An allow rule on an over-long path does not apply: the default effect decides.
    const allowLayer = layer("proxy", "deny", [allowNotEvil]);
    expect(evaluateAccess([allowLayer], request({ path: "/fine" })).allowed).toBe(true);
    expect(evaluateAccess([allowLayer], request({ path: `/${padded("!")}` })).allowed).toBe(false);
    // A check that fails on another condition is not undecided: the rule simply does not hold.
    const both = rule("both", {
      effect: "deny",
      priority: 1,
      methods: ["POST"],
      headerChecks: [{ name: "x-q", pattern: "evil" }],
    });
    expect(
      evaluateAccess([layer("proxy", "allow", [both])], request({ headers: { "x-q": padded("evil") } }))
        .allowed,
    ).toBe(true);
  });

  it("a pattern shared by rules runs once per field per request", () => {
    const rules = Array.from({ length: 50 }, (_, r) =>
      rule(`r${r}`, { effect: "allow", priority: r, headerChecks: [{ name: "x-role", pattern: "^admin$" }] }),
    );
    const stats = newEvaluationStats();
    evaluateAccess(
      [layer("credential", "allow", rules), layer("proxy", "allow", rules)],
      request({ headers: { "X-Role": "user" } }),
      stats,
    );
    expect(stats.executions).toBe(1);
  });

  it("the worst configuration the caps allow is bounded in matches, characters and work", () => {
    // Per parent: the most rules and checks, every pattern distinct, all run (each rule's last
    // check fails), every value at the bound, until the parent's pattern cost budget is spent.
    let n = 0;
    const layers = (["credential", "proxy", "target"] as const).map((name) => {
      let budget = MAX_RULE_PATTERN_COST;
      const next = () => {
        const pattern = `^/${n++}[a-z]+$`;
        const cost = patternCost(compileRulePattern(pattern, ""));
        if (cost > budget) return undefined;
        budget -= cost;
        return pattern;
      };
      const rules = Array.from({ length: MAX_RULES_PER_PARENT }, (_, r) => {
        const path = next();
        const headerChecks = Array.from({ length: MAX_HEADER_CHECKS - 1 }, (_, h) => ({
          name: `x-h${h}`,
          pattern: next(),
        }))
          .filter((check) => check.pattern)
          .map((check) => ({ ...check, presence: "absent" }));
        const queryChecks = Array.from({ length: MAX_QUERY_CHECKS }, (_, q) => ({
          name: `q${q}`,
          pattern: next(),
        }))
          .filter((check) => check.pattern)
          .map((check) => ({ ...check, presence: "absent" }));
        return rule(`${name}-${r}`, {
          effect: "allow",
          priority: 1,
          ...(path ? { pathPattern: path, pathPresence: "absent" } : {}),
          headerChecks: [...headerChecks, { name: "x-last", pattern: "^never$" }],
          queryChecks,
        });
      });
      return { name, defaultEffect: "allow" as const, rules: compileRules(rules) };
    });
    const value = "/".padEnd(MAX_MATCHED_VALUE_LENGTH, "a");
    const headers: Record<string, string> = { "x-last": "value" };
    for (let h = 0; h < MAX_HEADER_CHECKS; h++) headers[`x-h${h}`] = value;
    const query: Record<string, string> = {};
    for (let q = 0; q < MAX_QUERY_CHECKS; q++) query[`q${q}`] = value;
    const stats = newEvaluationStats();
    expect(evaluateAccess(layers, request({ path: value, headers, query }), stats).allowed).toBe(true);

    const patterns = layers.reduce(
      (sum, l) => sum + l.rules.rules.reduce((s, r) => s + r.checks.length, 0),
      0,
    );
    expect(patterns).toBeGreaterThan(300); // the configuration really is heavy
    expect(stats.executions).toBeGreaterThan(0);
    expect(stats.scannedChars).toBeLessThanOrEqual(stats.executions * MAX_MATCHED_VALUE_LENGTH);
    // Whatever the caps allow, one request's matching stays within the per-request budget; what
    // would go over it is not run.
    expect(stats.work).toBeLessThanOrEqual(MAX_RULE_WORK_PER_REQUEST);
    expect(stats.overBudget).toBeGreaterThan(0);
  });

  it("past the request's matching budget, deny rules hold and allow rules do not apply", () => {
    // Each check costs about 30 instructions x 1,000 characters: only a few fit the budget.
    const header = "a".repeat(1000);
    const denies = Array.from({ length: 20 }, (_, r) =>
      rule(`deny-${String(r).padStart(2, "0")}`, {
        effect: "deny",
        priority: 100 - r,
        headerChecks: [{ name: "x-h", pattern: `^(b|c)+${r}[0-9]{3}$` }],
      }),
    );
    const stats = newEvaluationStats();
    const decision = evaluateAccess(
      [layer("proxy", "allow", denies)],
      request({ headers: { "x-h": header } }),
      stats,
    );
    expect(stats.executions).toBeGreaterThan(0);
    expect(stats.executions).toBeLessThan(20);
    expect(stats.work).toBeLessThanOrEqual(MAX_RULE_WORK_PER_REQUEST);
    expect(decision).toMatchObject({
      allowed: false,
      ruleId: `deny-${String(stats.executions).padStart(2, "0")}`,
    });
    expect(decision.reason).toContain("more matching than allowed");
    // The same rules on a short value are all run, and none holds.
    expect(
      evaluateAccess([layer("proxy", "allow", denies)], request({ headers: { "x-h": "a" } })).allowed,
    ).toBe(true);
    // Allow rules past the budget do not apply: the default effect decides.
    const allows = denies.map((d) => ({
      ...d,
      effect: "allow" as const,
      ruleId: d.ruleId.replace("deny", "allow"),
    }));
    expect(
      evaluateAccess([layer("proxy", "deny", allows)], request({ headers: { "x-h": header } })).allowed,
    ).toBe(false);
  });
});
