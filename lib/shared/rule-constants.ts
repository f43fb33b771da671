/**
 * The value lists of access rules (spec 2.8), without zod or re2js: the rule entity
 * (lib/db/entities/rule.ts) reads them on the data plane's cold start. rule-schema.ts re-exports them.
 */
export const RULE_EFFECTS = ["allow", "deny"] as const;
export const RULE_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"] as const;
export const RULE_PRESENCES = ["present", "absent"] as const;

export type RuleEffect = (typeof RULE_EFFECTS)[number];
export type RuleMethod = (typeof RULE_METHODS)[number];
export type RulePresence = (typeof RULE_PRESENCES)[number];
