/**
 * Lambda event filtering, the subset the gateway's patterns use (lib/infra/region-stream.ts):
 * nested objects, arrays of allowed values (OR), exact strings, numbers, booleans and null,
 * `{exists}`, `{prefix}` and `{"anything-but": [...]}`. Every key of a pattern must match (AND);
 * several patterns match when any one does (OR), as on an event source mapping.
 *
 * The local poller applies it to what it reads before calling the consumer, as Lambda does before
 * invoking it; the consumer applies each processor's own patterns to route records.
 */
import type { FilterPattern, FilterValue } from "#lib/infra/region-stream.ts";

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function valueMatches(matcher: FilterValue, present: boolean, value: unknown): boolean {
  if (isRecord(matcher)) {
    if ("exists" in matcher) return matcher.exists === present;
    if (!present) return false;
    if ("prefix" in matcher) return typeof value === "string" && value.startsWith(matcher.prefix);
    if ("anything-but" in matcher) return !(matcher["anything-but"] as readonly unknown[]).includes(value);
    return false;
  }
  if (!present) return false;
  // A leaf holding a list (a string set, say) matches when any element does.
  if (Array.isArray(value)) return value.some((element) => element === matcher);
  return value === matcher;
}

function matchesAt(pattern: FilterPattern, event: unknown): boolean {
  for (const [key, rule] of Object.entries(pattern)) {
    const present = isRecord(event) && Object.hasOwn(event, key);
    const value = present ? (event as Record<string, unknown>)[key] : undefined;
    if (Array.isArray(rule)) {
      if (!(rule as readonly FilterValue[]).some((matcher) => valueMatches(matcher, present, value)))
        return false;
    } else if (!present || !matchesAt(rule as FilterPattern, value)) {
      return false;
    }
  }
  return true;
}

/** Whether `event` matches at least one of `patterns` (no pattern at all: everything matches). */
export function matchesAnyPattern(patterns: readonly FilterPattern[], event: unknown): boolean {
  return patterns.length === 0 || patterns.some((pattern) => matchesAt(pattern, event));
}
