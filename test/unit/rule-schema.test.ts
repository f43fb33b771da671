/** Access rule create body (spec 2.8, 4.8): both path forms, canonical shape, 400 naming each field. */
import { describe, expect, it } from "vitest";
import {
  compileRulePattern,
  MAX_PATTERN_INSTRUCTIONS,
  MAX_PATTERN_LENGTH,
  RulePatternError,
  regexFlagsProblem,
  rulePatternMemoSize,
  testPattern,
} from "#lib/domain/rules/regex.ts";
import {
  CreateRuleBody,
  MAX_HEADER_CHECKS,
  MAX_QUERY_CHECKS,
  normaliseRule,
  parseCreateRule,
} from "#lib/domain/rules/rule-schema.ts";
import { errorOf } from "../support/errors.ts";

/** The fields named by the 400 for this body. */
function failingFields(body: unknown): string[] {
  const error = errorOf(() => parseCreateRule(body));
  expect(error.status).toBe(400);
  expect(error.message).toBe("Input failed data validation");
  return error.body.fields as string[];
}

const base = { effect: "deny", priority: 10 };

describe("regex", () => {
  it("compiles with flags and finds anywhere", () => {
    expect(testPattern(compileRulePattern("admin", ""), "/v1/admin/users")).toBe(true);
    expect(testPattern(compileRulePattern("^admin", ""), "/v1/admin")).toBe(false);
    expect(testPattern(compileRulePattern("ADMIN", ""), "/admin")).toBe(false);
    expect(testPattern(compileRulePattern("ADMIN", "i"), "/admin")).toBe(true);
    expect(testPattern(compileRulePattern("^b$", ""), "a\nb")).toBe(false);
    expect(testPattern(compileRulePattern("^b$", "m"), "a\nb")).toBe(true);
    expect(testPattern(compileRulePattern("a.b", ""), "a\nb")).toBe(false);
    expect(testPattern(compileRulePattern("a.b", "s"), "a\nb")).toBe(true);
    expect(testPattern(compileRulePattern("x", "guy"), "xx")).toBe(true);
  });

  it("memoises each (pattern, flags) once", () => {
    const a = compileRulePattern("memo-[0-9]+", "i");
    const size = rulePatternMemoSize();
    expect(compileRulePattern("memo-[0-9]+", "i")).toBe(a);
    expect(compileRulePattern("memo-[0-9]+", "ig")).toBe(a); // g has no effect
    expect(rulePatternMemoSize()).toBe(size);
    expect(compileRulePattern("memo-[0-9]+", "")).not.toBe(a);
  });

  it("throws a typed error on invalid syntax, flags or length", () => {
    for (const [pattern, flags] of [
      ["(", ""],
      ["(?=a)", ""],
      ["(a)\\1", ""],
      ["a", "x"],
      ["a", "ii"],
      ["a".repeat(MAX_PATTERN_LENGTH + 1), ""],
    ] as const) {
      expect(() => compileRulePattern(pattern, flags)).toThrow(RulePatternError);
    }
    // Within the length but too costly to match: refused by its instruction count.
    expect(() => compileRulePattern("a".repeat(MAX_PATTERN_LENGTH), "")).toThrow(/too complex/);
    expect(() => compileRulePattern(`[a-z]{${MAX_PATTERN_INSTRUCTIONS}}`, "")).toThrow(/too complex/);
    expect(() =>
      compileRulePattern("^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", ""),
    ).not.toThrow();
    expect(regexFlagsProblem("imsguy")).toBeNull();
    expect(regexFlagsProblem("i m")).not.toBeNull();
  });

  it("matches in linear time: (a+)+$ on 'a'*50000+'!' completes fast", () => {
    const compiled = compileRulePattern("(a+)+$", "");
    const input = `${"a".repeat(50_000)}!`;
    const started = performance.now();
    expect(testPattern(compiled, input)).toBe(false);
    expect(testPattern(compileRulePattern("(x+x+)+y", ""), "x".repeat(50_000))).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe("CreateRuleBody", () => {
  it("accepts the flat path form, with default presence", () => {
    expect(parseCreateRule({ ...base, pathPattern: "^/admin" })).toEqual({
      effect: "deny",
      priority: 10,
      methods: [],
      path: { pattern: "^/admin", presence: "present" },
      pathPattern: "^/admin",
      pathPresence: "present",
      headerChecks: [],
      queryChecks: [],
      regexFlags: "",
      notes: "",
    });
    expect(parseCreateRule({ ...base, pathPattern: "^/admin", pathPresence: "absent" })).toMatchObject({
      path: { pattern: "^/admin", presence: "absent" },
      pathPresence: "absent",
    });
  });

  it("accepts the nested path form and gives the same canonical shape", () => {
    const nested = parseCreateRule({ ...base, path: { pattern: "^/admin", presence: "absent" } });
    const flat = parseCreateRule({ ...base, pathPattern: "^/admin", pathPresence: "absent" });
    expect(nested).toEqual(flat);
    expect(parseCreateRule({ ...base, path: { pattern: "x" } }).path).toEqual({
      pattern: "x",
      presence: "present",
    });
  });

  it("accepts a rule with no condition (matches every request)", () => {
    expect(parseCreateRule({ effect: "allow", priority: 0 })).toEqual({
      effect: "allow",
      priority: 0,
      methods: [],
      path: null,
      pathPattern: null,
      pathPresence: null,
      headerChecks: [],
      queryChecks: [],
      regexFlags: "",
      notes: "",
    });
    expect(parseCreateRule({ effect: "allow", priority: 1000 }).priority).toBe(1000);
  });

  it("upper-cases and de-duplicates methods, lower-cases header names, fills defaults", () => {
    const rule = parseCreateRule({
      ...base,
      methods: ["get", "Post", "GET"],
      headerChecks: [
        { name: "X-Api-Version", pattern: "^2" },
        { name: "X-Debug", presence: "absent" },
      ],
      queryChecks: [{ name: "Token" }],
      regexFlags: "im",
      notes: "  block v2  ",
    });
    expect(rule.methods).toEqual(["GET", "POST"]);
    expect(rule.headerChecks).toEqual([
      { name: "x-api-version", pattern: "^2", presence: "present" },
      { name: "x-debug", pattern: null, presence: "absent" },
    ]);
    expect(rule.queryChecks).toEqual([{ name: "Token", pattern: null, presence: "present" }]);
    expect(rule.regexFlags).toBe("im");
    expect(rule.notes).toBe("block v2");
  });

  it("normaliseRule maps validated input", () => {
    const input = CreateRuleBody.parse({ ...base, pathPattern: "a" });
    expect(normaliseRule(input).path).toEqual({ pattern: "a", presence: "present" });
  });

  it("requires effect and priority", () => {
    expect(failingFields({})).toEqual(["effect", "priority"]);
    expect(failingFields({ ...base, effect: "block" })).toEqual(["effect"]);
  });

  it("rejects priorities outside 0..1000 and non-integers", () => {
    for (const priority of [1001, -1, 1.5, "5", null, Number.NaN]) {
      expect(failingFields({ ...base, priority })).toEqual(["priority"]);
    }
  });

  it("rejects unknown and empty method lists, naming the element", () => {
    expect(failingFields({ ...base, methods: ["GET", "FETCH"] })).toEqual(["methods.1"]);
    expect(failingFields({ ...base, methods: ["CONNECT"] })).toEqual(["methods.0"]);
    expect(failingFields({ ...base, methods: [] })).toEqual(["methods"]);
    expect(failingFields({ ...base, methods: "GET" })).toEqual(["methods"]);
    expect(failingFields({ ...base, methods: Array(8).fill("GET") })).toEqual(["methods"]);
  });

  it("rejects both path forms, naming path", () => {
    expect(failingFields({ ...base, pathPattern: "a", path: { pattern: "b" } })).toEqual(["path"]);
    expect(failingFields({ ...base, pathPresence: "absent", path: { pattern: "b" } })).toEqual(["path"]);
  });

  it("requires a pattern for a path check", () => {
    expect(failingFields({ ...base, pathPresence: "absent" })).toEqual(["pathPattern"]);
    expect(failingFields({ ...base, path: { presence: "present" } })).toEqual(["path.pattern"]);
    expect(failingFields({ ...base, pathPattern: "" })).toEqual(["pathPattern"]);
    expect(failingFields({ ...base, pathPattern: "a", pathPresence: "maybe" })).toEqual(["pathPresence"]);
  });

  it("rejects invalid regexes, naming the exact field", () => {
    expect(failingFields({ ...base, pathPattern: "(" })).toEqual(["pathPattern"]);
    expect(failingFields({ ...base, path: { pattern: "[a-" } })).toEqual(["path.pattern"]);
    expect(
      failingFields({
        ...base,
        headerChecks: [
          { name: "a", pattern: "ok" },
          { name: "b", pattern: "(?=x)" },
        ],
        queryChecks: [{ name: "q", pattern: "(" }],
      }),
    ).toEqual(["headerChecks.1.pattern", "queryChecks.0.pattern"]);
    const error = errorOf(() => parseCreateRule({ ...base, pathPattern: "(" }));
    expect((error.body.errors as string[])[0]).toMatch(/^pathPattern: is not a valid regular expression/);
    expect(failingFields({ ...base, pathPattern: "a".repeat(MAX_PATTERN_LENGTH + 1) })).toEqual([
      "pathPattern",
    ]);
  });

  it("names every failing field in one 400", () => {
    expect(
      failingFields({
        effect: "allow",
        priority: 1001,
        pathPattern: "(",
        path: { pattern: "x" },
        foo: 1,
      }).sort(),
    ).toEqual(["foo", "path", "pathPattern", "priority"]);
    // Even when a field has the wrong type or is missing, the cross-field checks still run.
    expect(
      failingFields({ priority: "high", methods: "GET", headerChecks: [{ name: 1, pattern: "(" }] }).sort(),
    ).toEqual(["effect", "headerChecks.0.name", "headerChecks.0.pattern", "methods", "priority"]);
  });

  it("rejects unknown fields, also inside checks and path", () => {
    expect(failingFields({ ...base, ruleId: "r1", enabled: true })).toEqual(["ruleId", "enabled"]);
    expect(failingFields({ ...base, path: { pattern: "a", flags: "i" } })).toEqual(["path.flags"]);
    expect(failingFields({ ...base, headerChecks: [{ name: "a", value: "b" }] })).toEqual([
      "headerChecks.0.value",
    ]);
  });

  it("validates checks: names, presence, count", () => {
    expect(failingFields({ ...base, headerChecks: [{ name: "" }] })).toEqual(["headerChecks.0.name"]);
    expect(failingFields({ ...base, headerChecks: [{ name: "bad name" }] })).toEqual(["headerChecks.0.name"]);
    expect(failingFields({ ...base, queryChecks: [{ name: "q".repeat(257) }] })).toEqual([
      "queryChecks.0.name",
    ]);
    expect(failingFields({ ...base, queryChecks: [{ name: "q", presence: "yes" }] })).toEqual([
      "queryChecks.0.presence",
    ]);
    expect(
      failingFields({ ...base, headerChecks: Array(MAX_HEADER_CHECKS + 1).fill({ name: "a" }) }),
    ).toEqual(["headerChecks"]);
    expect(failingFields({ ...base, queryChecks: Array(MAX_QUERY_CHECKS + 1).fill({ name: "a" }) })).toEqual([
      "queryChecks",
    ]);
    expect(
      parseCreateRule({ ...base, queryChecks: Array(MAX_QUERY_CHECKS).fill({ name: "a b" }) }).queryChecks,
    ).toHaveLength(MAX_QUERY_CHECKS);
    expect(failingFields({ ...base, headerChecks: [{ name: "x", pattern: "[a-z]{500}" }] })).toEqual([
      "headerChecks.0.pattern",
    ]);
  });

  it("validates regexFlags and compiles patterns with them", () => {
    for (const regexFlags of ["x", "i m", "ii", 1]) {
      expect(failingFields({ ...base, regexFlags })).toEqual(["regexFlags"]);
    }
    // A bad flag does not hide a bad pattern.
    expect(failingFields({ ...base, regexFlags: "q", pathPattern: "(" })).toEqual([
      "regexFlags",
      "pathPattern",
    ]);
    expect(parseCreateRule({ ...base, regexFlags: "imsguy", pathPattern: "^a.b$" }).regexFlags).toBe(
      "imsguy",
    );
  });

  it("bounds notes", () => {
    expect(failingFields({ ...base, notes: "n".repeat(1001) })).toEqual(["notes"]);
    expect(parseCreateRule({ ...base, notes: "n".repeat(1000) }).notes).toHaveLength(1000);
  });

  it("rejects a body that is not an object", () => {
    expect(failingFields("rule")).toEqual(["body"]);
    expect(failingFields(null)).toEqual(["body"]);
  });
});
