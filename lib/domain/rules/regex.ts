/**
 * Regular expressions of access rules, compiled with re2js (RE2: linear-time matching, no
 * backtracking), so that no pattern a client stores can stall the data plane (ReDoS).
 *
 * Compiled patterns are memoised per warm function: each (pattern, flags) pair is compiled once.
 *
 * re2js (about 147 KiB minified) is loaded on demand, so that a data-plane cold start for a proxy
 * without rules never reads it: `await loadRuleEngine()` before the first compile. Core API modules
 * that validate patterns import `./regex-eager.ts`, which installs it at start. Compiling before
 * either throws RuleEngineNotLoadedError.
 */
import type { RE2JS } from "re2js";
import { type FieldValue, type Matched, matchValues } from "#lib/domain/request-view.ts";

type Re2Module = typeof import("re2js");
let re2: Re2Module | undefined;

/** A pattern was compiled before re2js was loaded (a missing `await loadRuleEngine()`). */
export class RuleEngineNotLoadedError extends Error {
  override name = "RuleEngineNotLoadedError";
  constructor() {
    super("The rule engine (re2js) is not loaded: await loadRuleEngine() before compiling rule patterns");
  }
}

/** Use this re2js module (regex-eager.ts passes its static import). */
export function installRuleEngine(module: Re2Module): void {
  re2 ??= module;
}

/** Load re2js (once; later calls return at once). */
export async function loadRuleEngine(): Promise<void> {
  if (!re2) installRuleEngine(await import("re2js"));
}

export function ruleEngineLoaded(): boolean {
  return re2 !== undefined;
}

function engine(): Re2Module {
  if (!re2) throw new RuleEngineNotLoadedError();
  return re2;
}

/** Longest pattern accepted, in characters. */
export const MAX_PATTERN_LENGTH = 1024;

/**
 * Most instructions a compiled pattern may have. Matching costs at worst (instructions x input
 * characters), so this bounds each pattern's cost per character: a counted repetition such as
 * `[a-z]{1000}` (1002 instructions) is refused, `^[0-9a-f]{8}-[0-9a-f]{4}$` (16) is fine.
 */
export const MAX_PATTERN_INSTRUCTIONS = 200;

/** Flags a rule may carry; `g`, `u` and `y` are accepted and have no effect (matching is a find-anywhere test). */
export const RULE_REGEX_FLAGS = ["i", "m", "s", "g", "u", "y"] as const;

/** Most compiled patterns kept per warm function before the oldest are evicted. */
export const PATTERN_MEMO_LIMIT = 5000;

/** A pattern (or its flags) that cannot be compiled. `reason` is meant for the caller. */
export class RulePatternError extends Error {
  readonly pattern: string;
  readonly flags: string;
  readonly reason: string;

  constructor(pattern: string, flags: string, reason: string) {
    super(`Invalid rule pattern: ${reason}`);
    this.name = "RulePatternError";
    this.pattern = pattern;
    this.flags = flags;
    this.reason = reason;
  }
}

/** Why a flags string is not acceptable, or null if it is (letters of `imsguy`, each at most once). */
export function regexFlagsProblem(flags: string): string | null {
  const seen = new Set<string>();
  for (const flag of flags) {
    if (!(RULE_REGEX_FLAGS as readonly string[]).includes(flag)) {
      return `unknown flag ${JSON.stringify(flag)}: only the letters i, m, s, g, u, y are allowed`;
    }
    if (seen.has(flag)) return `flag ${JSON.stringify(flag)} is repeated`;
    seen.add(flag);
  }
  return null;
}

function flagBits(pattern: string, flags: string): number {
  const problem = regexFlagsProblem(flags);
  if (problem) throw new RulePatternError(pattern, flags, problem);
  const { RE2JS } = engine();
  let bits = 0;
  if (flags.includes("i")) bits |= RE2JS.CASE_INSENSITIVE;
  if (flags.includes("m")) bits |= RE2JS.MULTILINE;
  if (flags.includes("s")) bits |= RE2JS.DOTALL;
  return bits;
}

const memo = new Map<string, RE2JS>();

/**
 * Compile a rule pattern with the rule's flags (memoised). Throws RulePatternError when the pattern
 * is too long, is not valid RE2 syntax (e.g. `(`, look-arounds, back-references), or the flags are bad.
 */
export function compileRulePattern(pattern: string, flags: string): RE2JS {
  const bits = flagBits(pattern, flags);
  const key = `${bits}:${pattern}`;
  const hit = memo.get(key);
  if (hit) return hit;
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new RulePatternError(pattern, flags, `at most ${MAX_PATTERN_LENGTH} characters`);
  }
  const { RE2JS, RE2JSException } = engine();
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern, bits);
  } catch (error) {
    if (error instanceof RE2JSException) {
      throw new RulePatternError(pattern, flags, error.message.replace(/^error parsing regexp: /, ""));
    }
    throw error;
  }
  const size = compiled.programSize();
  if (size > MAX_PATTERN_INSTRUCTIONS) {
    throw new RulePatternError(
      pattern,
      flags,
      `too complex: compiles to ${size} instructions, at most ${MAX_PATTERN_INSTRUCTIONS} (use fewer or smaller counted repetitions such as {n})`,
    );
  }
  if (memo.size >= PATTERN_MEMO_LIMIT) {
    // Simple eviction: drop the oldest insertion (Map iterates in insertion order).
    const oldest = memo.keys().next();
    if (!oldest.done) memo.delete(oldest.value);
  }
  memo.set(key, compiled);
  return compiled;
}

/** Why a pattern cannot be compiled with these flags, or null if it can. */
export function rulePatternProblem(pattern: string, flags: string): string | null {
  try {
    compileRulePattern(pattern, flags);
    return null;
  } catch (error) {
    if (error instanceof RulePatternError) return error.reason;
    throw error;
  }
}

/**
 * The cost of a compiled pattern, in instructions: matching it against n characters costs at most
 * about cost x n steps. Summed per parent to bound the work of its rules (see MAX_RULE_PATTERN_COST).
 */
export function patternCost(compiled: RE2JS): number {
  return compiled.programSize();
}

/** True if the pattern is found anywhere in the input (not anchored unless the pattern uses ^ or $). */
export function testPattern(compiled: RE2JS, input: string): boolean {
  return compiled.matcher(input).find();
}

/** Number of memoised patterns (for tests and metrics). */
export function rulePatternMemoSize(): number {
  return memo.size;
}

/** What matching cost for one request: pattern executions, characters scanned, and cost x characters. */
export interface EvaluationStats {
  executions: number;
  scannedChars: number;
  /** Sum over executions of (pattern instructions x characters scanned): the bound on matching steps. */
  work: number;
  /** Matches not run because they would have gone over the request's work budget. */
  overBudget: number;
}

export const newEvaluationStats = (): EvaluationStats => ({
  executions: 0,
  scannedChars: 0,
  work: 0,
  overBudget: 0,
});

/**
 * Pattern matching for one request under a work budget, shared by access rules and predicates:
 * each (pattern, field) pair runs at most once per request (memoised), and a match whose work
 * (pattern cost x characters) would take the request over `budget` is not run (undefined).
 */
export class BudgetedMatcher {
  /** pattern -> field -> matched. */
  private readonly results = new Map<RE2JS, Map<string, Matched | undefined>>();
  private spent = 0;

  constructor(
    private readonly budget: number,
    readonly stats: EvaluationStats = newEvaluationStats(),
  ) {}

  /** How the field's values match (request-view.ts matchValues); undefined when over the budget. */
  matches(regex: RE2JS, cost: number, field: string, values: readonly FieldValue[]): Matched | undefined {
    let byField = this.results.get(regex);
    if (!byField) {
      byField = new Map();
      this.results.set(regex, byField);
    }
    if (byField.has(field)) return byField.get(field);
    let work = 0;
    for (const value of values) for (const text of value) work += cost * Math.max(1, text.length);
    if (this.spent + work > this.budget) {
      this.stats.overBudget += 1;
      byField.set(field, undefined);
      return undefined;
    }
    this.spent += work;
    const matched = matchValues(values, (text) => {
      this.stats.executions += 1;
      this.stats.scannedChars += text.length;
      this.stats.work += cost * Math.max(1, text.length);
      return testPattern(regex, text);
    });
    byField.set(field, matched);
    return matched;
  }
}
