/**
 * Which transform runs (issue 10 "Selection"; docs/transforms.md "Running"): of each kind, only the
 * highest-priority active transform that applies to the request (ties: the oldest, then the lower
 * id). Pure: the data plane compiles the predicates (lib/domain/predicates/evaluate.ts) and passes
 * the outcomes in.
 */
import type { Outcome } from "#lib/domain/predicates/evaluate.ts";
import type { StatusOperator, TransformEffect, TransformMode } from "#lib/shared/transform-constants.ts";

export interface Selectable {
  transformId: string;
  priority: number;
  /** ISO 8601: the oldest of equal priority wins. */
  createdAt: string;
  transformActive: boolean;
}

/** The order in which transforms are tried: priority high to low, then oldest first, then id. */
export function selectionOrder<T extends Selectable>(transforms: readonly T[]): T[] {
  return [...transforms].sort(
    (a, b) =>
      b.priority - a.priority ||
      a.createdAt.localeCompare(b.createdAt) ||
      a.transformId.localeCompare(b.transformId),
  );
}

/**
 * The transform that runs: the first active one, in selection order, that applies; `applies` is
 * called in that order and not after the first match. Undefined when none applies.
 */
export function selectTransform<T extends Selectable>(
  ordered: readonly T[],
  applies: (transform: T) => boolean,
): T | undefined {
  for (const transform of ordered) if (transform.transformActive && applies(transform)) return transform;
  return undefined;
}

/** Whether the target's status satisfies every `responseStatus` item (true for none). */
export function statusHolds(
  items: readonly { operator: StatusOperator; value: number }[],
  status: number,
): boolean {
  return items.every(({ operator, value }) => {
    switch (operator) {
      case "eq":
        return status === value;
      case "ne":
        return status !== value;
      case "gt":
        return status > value;
      case "gte":
        return status >= value;
      case "lt":
        return status < value;
      case "lte":
        return status <= value;
    }
    return false;
  });
}

/** Several predicate sets together: false if one fails, else undefined if one is undecided, else true. */
export function allHold(outcomes: readonly Outcome[]): Outcome {
  let result: Outcome = true;
  for (const outcome of outcomes) {
    if (outcome === false) return false;
    if (outcome === undefined) result = undefined;
  }
  return result;
}

/**
 * Whether a transform applies, from the outcome of all its predicates: mode `all` always;
 * `conditional` + `include` when they hold, + `exclude` unless they hold (null effect: include).
 * An undecided outcome applies (as for meters): padding a header or a body never takes a request
 * out of a transform, e.g. one that redacts.
 */
export function transformApplies(
  mode: TransformMode,
  effect: TransformEffect | null,
  outcome: () => Outcome,
): boolean {
  if (mode === "all") return true;
  const result = outcome();
  if (result === undefined) return true;
  return effect === "exclude" ? !result : result;
}
