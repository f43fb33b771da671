/**
 * The value lists and bounds of transforms (spec 2.10), without zod: the transform entity
 * (lib/db/entities/transform.ts) reads them on the data plane's cold start.
 */
export const TRANSFORM_KINDS = ["request", "response"] as const;
export const TRANSFORM_MODES = ["all", "conditional"] as const;
export const TRANSFORM_EFFECTS = ["include", "exclude"] as const;
export const STATUS_OPERATORS = ["eq", "ne", "gt", "gte", "lt", "lte"] as const;

export type TransformKind = (typeof TRANSFORM_KINDS)[number];
export type TransformMode = (typeof TRANSFORM_MODES)[number];
export type TransformEffect = (typeof TRANSFORM_EFFECTS)[number];
export type StatusOperator = (typeof STATUS_OPERATORS)[number];

/** Most transforms of each kind on one proxy (exact: a count item beside them, lib/domain/transforms.ts). */
export const MAX_TRANSFORMS_PER_PROXY = 20;
/** Priority: an integer, higher wins when several transforms match (as rules: 0 to 1000). */
export const MIN_TRANSFORM_PRIORITY = 0;
export const MAX_TRANSFORM_PRIORITY = 1000;
export const MAX_TRANSFORM_NOTES_LENGTH = 1000;
