/**
 * The CPU cost of the access-rule decision (docs/access-rules.md, "Limits"), measured in-process:
 * a baseline (one simple rule) beside the worst case the caps allow: three layers with the most
 * rules, each with the most checks, every pattern distinct and run (no rule decides until the
 * last check of the last rule), every tested value at the matched length bound. Two pattern
 * shapes: typical (anchored or literal) and adversarial (the most NFA work per character a
 * pattern under the instruction cap can cause). CPU ms per evaluation, warm (rules compiled once,
 * as the data plane caches them). `tsx bench/rule-cost.ts` runs this section alone.
 */
import { randomBytes } from "node:crypto";
import { MAX_RULES_PER_PARENT } from "#lib/db/regional.ts";
import { compileRulePattern, patternCost } from "#lib/domain/rules/regex.ts";
import "#lib/domain/rules/regex-eager.ts";
import {
  compileRules,
  type EvaluableRule,
  evaluateAccess,
  MAX_MATCHED_VALUE_LENGTH,
  MAX_RULE_WORK_PER_REQUEST,
  newEvaluationStats,
  type RuleLayer,
  type RuleRequest,
} from "#lib/domain/rules/rule-evaluator.ts";
import {
  MAX_HEADER_CHECKS,
  MAX_QUERY_CHECKS,
  MAX_RULE_PATTERN_COST,
  parseCreateRule,
} from "#lib/domain/rules/rule-schema.ts";

export interface RuleCostRow {
  name: string;
  cpuMs: number;
  executions: number;
  scannedChars: number;
  work: number;
}

const LAYERS = ["credential", "proxy", "target"] as const;

/** A value of `length` characters (default: the bound), varied per request so no engine cache sees the same input twice. */
const value = (alphabet: string, length = MAX_MATCHED_VALUE_LENGTH) => {
  const bytes = randomBytes(length);
  for (let i = 0; i < length; i++) bytes[i] = alphabet.charCodeAt(bytes[i]! % alphabet.length);
  // Decoded from bytes, as a request's values are (JSON.parse of the event): one flat string, not
  // the 4,096-piece rope `+=` would build, which V8 flattens (copies) on first scan.
  return bytes.toString("latin1");
};

/**
 * The worst-case configuration: per parent, as many rules and checks as the caps allow with
 * patterns from `shape(n)` (distinct per n), within the parent's pattern cost budget.
 */
export function worstCaseLayers(shape: (n: number) => string): RuleLayer[] {
  let n = 0;
  return LAYERS.map((name) => {
    const rules: EvaluableRule[] = [];
    let budget = MAX_RULE_PATTERN_COST;
    const next = () => {
      const pattern = shape(n++);
      const cost = patternCost(compileRulePattern(pattern, ""));
      if (cost > budget) return undefined;
      budget -= cost;
      return pattern;
    };
    for (let r = 0; r < MAX_RULES_PER_PARENT; r++) {
      const path = next();
      const headerChecks = [];
      for (let h = 0; h < MAX_HEADER_CHECKS - 1; h++) {
        const pattern = next();
        if (pattern) headerChecks.push({ name: `x-h${h}`, pattern, presence: "absent" });
      }
      const queryChecks = [];
      for (let q = 0; q < MAX_QUERY_CHECKS; q++) {
        const pattern = next();
        if (pattern) queryChecks.push({ name: `q${q}`, pattern, presence: "absent" });
      }
      // The last check fails (a missing header must be present) only after every pattern ran:
      // presence-only checks run first, so this one is a pattern check on a header that is sent.
      headerChecks.push({ name: "x-last", pattern: "^never$", presence: "present" });
      rules.push({
        ruleId: `${name}-${r}`,
        ...parseCreateRule({
          effect: "allow",
          priority: 500,
          ...(path ? { pathPattern: path, pathPresence: "absent" } : {}),
          headerChecks,
          queryChecks,
        }),
      });
    }
    return { name, defaultEffect: "allow", rules: compileRules(rules) };
  });
}

function worstRequest(alphabet: string, length = MAX_MATCHED_VALUE_LENGTH): RuleRequest {
  const headers: Record<string, string> = { "x-last": "value" };
  for (let h = 0; h < MAX_HEADER_CHECKS; h++) headers[`x-h${h}`] = value(alphabet, length);
  const query: Record<string, string> = {};
  for (let q = 0; q < MAX_QUERY_CHECKS; q++) query[`q${q}`] = value(alphabet, length);
  return { method: "GET", path: `/${value(alphabet, length).slice(1)}`, headers, query };
}

/**
 * Values as long as one match of `pattern` may be within the per-request budget (the costliest
 * single match), or `parts` times shorter (as many matches as fit): the per-request budget, not
 * the value bound, is then what limits the work.
 */
const budgetLength = (pattern: string, parts = 1) =>
  Math.max(
    1,
    Math.min(
      MAX_MATCHED_VALUE_LENGTH,
      Math.floor(MAX_RULE_WORK_PER_REQUEST / patternCost(compileRulePattern(pattern, "")) / parts),
    ),
  );

function measure(
  name: string,
  layers: RuleLayer[],
  makeRequest: () => RuleRequest,
  rounds: number,
): RuleCostRow {
  const requests = Array.from({ length: rounds + 2 }, makeRequest);
  for (const request of requests.slice(0, 2)) evaluateAccess(layers, request); // warm up
  const stats = newEvaluationStats();
  const started = process.cpuUsage();
  for (const request of requests.slice(2)) evaluateAccess(layers, request, stats);
  const used = process.cpuUsage(started);
  return {
    name,
    cpuMs: (used.user + used.system) / 1000 / rounds,
    executions: stats.executions / rounds,
    scannedChars: stats.scannedChars / rounds,
    work: stats.work / rounds,
  };
}

export function ruleCostRows(rounds = Number(process.env.BENCH_RULE_ROUNDS ?? 20)): RuleCostRow[] {
  const simple: RuleLayer[] = [
    {
      name: "proxy",
      defaultEffect: "allow",
      rules: compileRules([
        { ruleId: "one", ...parseCreateRule({ effect: "deny", priority: 1, pathPattern: "^/admin" }) },
      ]),
    },
  ];
  const typicalRequest = (): RuleRequest => ({
    method: "GET",
    path: "/v1/items/42",
    headers: { authorization: `Bearer ${value("abcdef0123456789").slice(0, 40)}`, "user-agent": "bench/1.0" },
    query: { limit: "5" },
  });
  return [
    measure("baseline: 1 rule, 1 path pattern", simple, typicalRequest, rounds * 50),
    measure(
      "worst case, typical patterns (^/v1/items/<n>/[0-9]+$)",
      worstCaseLayers((n) => `^/v1/items/${n}/[0-9]+$`),
      () => worstRequest("/v1items0123456789"),
      rounds,
    ),
    measure(
      "worst case, literal patterns (token-<n>)",
      worstCaseLayers((n) => `token-${n}`),
      () => worstRequest("token-0123456789"),
      rounds,
    ),
    measure(
      "worst case, adversarial patterns ([ab]*a[ab]{20}[^ab<c>])",
      worstCaseLayers((n) => `[ab]*a[ab]{20}[^ab${String.fromCharCode(0x100 + n)}]`),
      () => worstRequest("ab"),
      rounds,
    ),
    measure(
      "worst case, adversarial patterns ([a-z]{150}[^a-z<c>])",
      worstCaseLayers((n) => `[a-z]{150}[^a-z${String.fromCharCode(0x100 + n)}]`),
      () => worstRequest("abc"),
      rounds,
    ),
    // The per-request budget, not the value bound, limits these: values sized so it is spent.
    ...[1, 8].flatMap((parts) => [
      measure(
        `budget spent, [ab]*a[ab]{20}[^ab<c>], values of ${budgetLength("[ab]*a[ab]{20}[^abĀ]", parts)}`,
        worstCaseLayers((n) => `[ab]*a[ab]{20}[^ab${String.fromCharCode(0x100 + n)}]`),
        () => worstRequest("ab", budgetLength("[ab]*a[ab]{20}[^abĀ]", parts)),
        rounds,
      ),
      measure(
        `budget spent, [a-z]{150}[^a-z<c>], values of ${budgetLength("[a-z]{150}[^a-zĀ]", parts)}`,
        worstCaseLayers((n) => `[a-z]{150}[^a-z${String.fromCharCode(0x100 + n)}]`),
        () => worstRequest("abc", budgetLength("[a-z]{150}[^a-zĀ]", parts)),
        rounds,
      ),
    ]),
  ];
}

export function printRuleCost(rows: RuleCostRow[]): void {
  console.log("\nAccess-rule decision, CPU per evaluation (in-process, warm, rules compiled once)");
  for (const row of rows) {
    console.log(
      `  ${row.name.padEnd(60)} ${row.cpuMs.toFixed(3).padStart(9)} ms  ${String(Math.round(row.executions)).padStart(5)} matches  ${String(Math.round(row.scannedChars)).padStart(8)} chars  ${String(Math.round(row.work)).padStart(10)} work`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) printRuleCost(ruleCostRows());
