/**
 * The value lists of predicates and variable bindings (spec 2.9, 2.10), without zod or re2js: the
 * meter entity (lib/db/entities/meter.ts) reads them on the data plane's cold start. schema.ts
 * re-exports them.
 */
import { RULE_PRESENCES } from "./rule-constants.ts";

export const PREDICATE_PRESENCES = RULE_PRESENCES;
export type PredicatePresence = (typeof PREDICATE_PRESENCES)[number];
export const VARIABLE_SOURCES = ["header", "query", "path", "body", "token"] as const;
export type VariableSource = (typeof VARIABLE_SOURCES)[number];
