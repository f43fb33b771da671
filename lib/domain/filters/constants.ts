/**
 * Bounds of a proxy's filters and overrides (docs/filters.md). zod-free: the data plane reads it.
 */

/** Most CIDR ranges in each of `ipAllow` and `ipDeny`. */
export const MAX_IP_RANGES = 100;
/** Most header names in each of `requiredHeaders` and `stripHeaders`. */
export const MAX_FILTER_HEADERS = 20;
/** Most dot paths in `removeResponseFields`. */
export const MAX_REMOVED_FIELDS = 50;
/** Most entries in `pathOverrides`. */
export const MAX_PATH_OVERRIDES = 50;
/** Longest `pathPrefix`, in characters. */
export const MAX_PATH_PREFIX_LENGTH = 512;

/** The `*` segment of a removed field's dot path: every element of an array, every property of an object. */
export const ANY_SEGMENT = "*";
