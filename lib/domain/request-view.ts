/**
 * The view of the caller's request that access rules, meters' and transforms' predicates and
 * transforms see (docs/access-rules.md "Several values", "The request path"; docs/predicates.md
 * "Checks"; docs/transforms.md "What user code sees"). Pure: one definition of
 *
 * - how a check tests a field with several values (repeated query parameters, header lines joined
 *   with commas, JSON arrays at a body path or claim): `fieldValues`, `checkOutcome`;
 * - the path as matched and forwarded (RFC 3986 6.2.2 normalisation): `normalisePath`;
 * - a request map without the caller's credential: `omitNames`.
 */

/** Longest header value, query value or path (in characters, all values of a name together) that is matched. */
export const MAX_MATCHED_VALUE_LENGTH = 4096;
/** Most values of one header or query parameter that are matched. */
export const MAX_MATCHED_VALUES = 16;

/**
 * One value of a field as checks test it: the value, then its elements when it is a list (a
 * header value with commas: its comma-separated elements, trimmed; a JSON array: its elements).
 */
export type FieldValue = readonly [string, ...string[]];

/** The values of one field; `overLong` when they exceed the matched bounds. */
export interface FieldValues {
  values: FieldValue[];
  overLong: boolean;
}

/** Whether some value (or element) matches, and whether every value matches as a whole or in every element. */
export interface Matched {
  any: boolean;
  every: boolean;
}

/** A header value: the whole, then its comma-separated elements (trimmed) when it has a comma. */
export const headerValue = (value: string): FieldValue =>
  value.includes(",") ? [value, ...value.split(",").map((element) => element.trim())] : [value];

/** The field of these values (undefined for none), `overLong` past the matched bounds (whole values counted). */
export function fieldValues(values: FieldValue[] | undefined): FieldValues | undefined {
  if (!values?.length) return undefined;
  let length = 0;
  for (const [whole] of values) length += whole.length;
  return { values, overLong: values.length > MAX_MATCHED_VALUES || length > MAX_MATCHED_VALUE_LENGTH };
}

/**
 * Tests every value and element once. `any`: some value or element matches. `every`: each value
 * matches as a whole, or it is a list and every element matches.
 */
export function matchValues(values: readonly FieldValue[], test: (text: string) => boolean): Matched {
  let any = false;
  let every = true;
  for (const [whole, ...elements] of values) {
    const matched = test(whole);
    let all = elements.length > 0;
    for (const element of elements) {
      if (test(element)) any = true;
      else all = false;
    }
    if (matched) any = true;
    else if (!all) every = false;
  }
  return { any, every };
}

/**
 * The outcome of one check on a field, the one rule for rules and predicates. Without a pattern
 * (`match` null) presence is tested: any value counts. With a pattern, `broad` says which side
 * the check must err on: true for a `deny` rule and a predicate set that makes its meter or
 * transform apply, false for an `allow` rule and an `exclude` set.
 *
 * | presence | broad (deny, include) | narrow (allow, exclude) |
 * |---|---|---|
 * | present | some value or element matches | every value matches (whole, or every element) |
 * | absent | not every value matches | no value or element matches |
 *
 * undefined (undecided) when the values are over the bounds or `match` answers undefined.
 */
export function checkOutcome(
  entry: FieldValues | undefined | "undecided",
  presence: "present" | "absent",
  match: ((entry: FieldValues) => Matched | undefined) | null,
  broad: boolean,
): boolean | undefined {
  if (entry === "undecided") return undefined;
  const present = presence === "present";
  if (match === null || entry === undefined)
    return match === null ? (entry !== undefined) === present : !present;
  if (entry.overLong) return undefined;
  const matched = match(entry);
  if (matched === undefined) return undefined;
  return present ? (broad ? matched.any : matched.every) : !(broad ? matched.every : matched.any);
}

/**
 * The path as checked and forwarded (RFC 3986 section 6.2.2): escapes of unreserved characters
 * (ALPHA / DIGIT / "-" / "." / "_" / "~") decoded, the hex digits of the other escapes upper-cased.
 * Decoded once: `%2561` stays `%2561`, `%2F` stays an escape. Malformed escapes stay as they are.
 */
export const normalisePath = (path: string): string =>
  path.replace(/%[0-9a-f]{2}/gi, (hex) => {
    const char = String.fromCharCode(Number.parseInt(hex.slice(1), 16));
    return /[\w.~-]/.test(char) ? char : hex.toUpperCase();
  });

/** A copy (null prototype) of a header or query map without the names given (the caller's credential). */
export function omitNames<T>(map: Record<string, T>, names: ReadonlySet<string>): Record<string, T> {
  const kept: Record<string, T> = Object.create(null);
  for (const [name, value] of Object.entries(map)) if (!names.has(name)) kept[name] = value;
  return kept;
}
