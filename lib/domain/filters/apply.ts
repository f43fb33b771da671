/**
 * What a proxy's payload filter and path overrides do (docs/filters.md), as plain functions:
 * the data plane compiles them into a proxy's configuration (lib/data-plane/policies.ts).
 * Pure; zod-free.
 */
import { ANY_SEGMENT } from "./constants.ts";

/**
 * Remove the fields at `paths` (dot paths, split in segments) from a parsed JSON value, in place.
 * A segment names an own property of an object or a canonical index of an array; `*` is every
 * element of an array or every property of an object. The last segment removes an object's
 * property (an array element is never removed: the indexes of the others would shift). Answers
 * how many properties were removed.
 */
export function removeFields(value: unknown, paths: readonly (readonly string[])[]): number {
  let removed = 0;
  const visit = (current: unknown, segments: readonly string[], at: number): void => {
    if (current === null || typeof current !== "object") return;
    const segment = segments[at];
    if (segment === undefined) return;
    const last = at === segments.length - 1;
    if (Array.isArray(current)) {
      if (last) return;
      if (segment === ANY_SEGMENT) {
        for (const element of current) visit(element, segments, at + 1);
        return;
      }
      if (!isIndex(segment)) return;
      const index = Number(segment);
      if (index < current.length) visit(current[index], segments, at + 1);
      return;
    }
    const record = current as Record<string, unknown>;
    const names =
      segment === ANY_SEGMENT ? Object.keys(record) : Object.hasOwn(record, segment) ? [segment] : [];
    for (const name of names) {
      if (last) {
        delete record[name];
        removed += 1;
      } else visit(record[name], segments, at + 1);
    }
  };
  for (const segments of paths) if (segments.length > 0) visit(value, segments, 0);
  return removed;
}

const isIndex = (segment: string) =>
  segment === "0" ||
  (segment.length > 0 && segment[0] !== "0" && [...segment].every((c) => c >= "0" && c <= "9"));

/**
 * True when `prefix` covers `path` on segment boundaries: `/v1` covers `/v1`, `/v1/` and
 * `/v1/items`, not `/v10`; `/v1/` covers `/v1/items`, not `/v1`; `/` covers every path. Compared
 * as sent (case-sensitive, percent-escapes not decoded).
 */
export function prefixCovers(prefix: string, path: string): boolean {
  if (!path.startsWith(prefix)) return false;
  return prefix.endsWith("/") || path.length === prefix.length || path[prefix.length] === "/";
}

/** The entry whose prefix covers the path, the longest one; undefined when none does. */
export function selectPathOverride<T extends { pathPrefix: string }>(
  overrides: readonly T[],
  path: string,
): T | undefined {
  let best: T | undefined;
  for (const candidate of overrides)
    if (
      prefixCovers(candidate.pathPrefix, path) &&
      (!best || candidate.pathPrefix.length > best.pathPrefix.length)
    )
      best = candidate;
  return best;
}
