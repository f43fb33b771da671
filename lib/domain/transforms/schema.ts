/**
 * Transforms (spec 2.10, 4.10): the request bodies, the canonical configuration that is stored
 * and returned, and the cross-field rules (docs/transforms.md). The code itself is checked by
 * code.ts (its size here, as a field: a 400 naming `code`).
 *
 * Decisions the spec leaves open:
 * - `effect` is required (include or exclude) when `transformMode` is `conditional`.
 * - `priority` is an integer from 0 to 1000 (default 0), as a rule's.
 * - Response-only predicates: `responseHeaders` are {name, pattern?, presence} over the target's
 *   answer headers (as `headers`), `responseBody` are {path, pattern?, presence} over its JSON
 *   body (as `body`), `responseStatus` are {operator, value} with value an integer 100-599; all
 *   of them must hold. A request transform refuses them (unknown fields).
 * - `null` clears an optional field on a PUT (back to null, [] or "").
 */
import { z } from "zod";
import {
  BodyPredicate,
  HeaderPredicate,
  PredicateFields,
  type StoredPredicates,
} from "#lib/domain/predicates/schema.ts";
import {
  MAX_TRANSFORM_NOTES_LENGTH,
  MAX_TRANSFORM_PRIORITY,
  MIN_TRANSFORM_PRIORITY,
  STATUS_OPERATORS,
  type StatusOperator,
  TRANSFORM_EFFECTS,
  TRANSFORM_MODES,
  type TransformEffect,
  type TransformKind,
  type TransformMode,
} from "#lib/shared/transform-constants.ts";
import { codeBytes, MAX_TRANSFORM_CODE_BYTES } from "./code.ts";

export * from "#lib/shared/transform-constants.ts";

const MAX_RESPONSE_CHECKS = 20;
const oneOf = (values: readonly string[]) => `must be one of ${values.join(", ")}`;
const enumOf = <T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: (issue) => (issue.input === undefined ? "is required" : oneOf(values)) });
const bool = z.boolean({
  error: (issue) => (issue.input === undefined ? "is required" : "must be true or false"),
});
const priorityRange = `must be an integer from ${MIN_TRANSFORM_PRIORITY} to ${MAX_TRANSFORM_PRIORITY}`;
const Priority = z
  .number({ error: priorityRange })
  .int(priorityRange)
  .min(MIN_TRANSFORM_PRIORITY, priorityRange)
  .max(MAX_TRANSFORM_PRIORITY, priorityRange);
const Notes = z
  .string({ error: "must be a string" })
  .trim()
  .max(MAX_TRANSFORM_NOTES_LENGTH, `at most ${MAX_TRANSFORM_NOTES_LENGTH} characters`);

/** The user's TypeScript or JavaScript; the AST rules are code.ts's (their own 400 body). */
export const TransformCode = z
  .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
  .min(1, "must not be empty")
  .refine(
    (code) => codeBytes(code) <= MAX_TRANSFORM_CODE_BYTES,
    `at most ${MAX_TRANSFORM_CODE_BYTES} bytes (512 KB) of UTF-8`,
  );

export const StatusPredicate = z
  .object(
    {
      operator: enumOf(STATUS_OPERATORS),
      value: z
        .number({ error: "must be an integer from 100 to 599" })
        .int("must be an integer from 100 to 599")
        .min(100, "must be an integer from 100 to 599")
        .max(599, "must be an integer from 100 to 599"),
    },
    { error: "must be an object" },
  )
  .strict();

const checks = <T extends z.ZodType>(item: T) =>
  z
    .array(item, { error: "must be an array" })
    .max(MAX_RESPONSE_CHECKS, `at most ${MAX_RESPONSE_CHECKS} checks`);

/** Response-only predicates (response transforms). */
export const ResponsePredicateFields = {
  responseHeaders: checks(HeaderPredicate),
  responseBody: checks(BodyPredicate),
  responseStatus: checks(StatusPredicate),
} as const;

const sharedFields = {
  transformMode: enumOf(TRANSFORM_MODES).optional(),
  effect: enumOf(TRANSFORM_EFFECTS).nullable().optional(),
  transformActive: bool.optional(),
  priority: Priority.nullable().optional(),
  methods: PredicateFields.methods.nullable().optional(),
  path: PredicateFields.path.nullable().optional(),
  query: PredicateFields.query.nullable().optional(),
  headers: PredicateFields.headers.nullable().optional(),
  body: PredicateFields.body.nullable().optional(),
  token: PredicateFields.token.nullable().optional(),
  variables: PredicateFields.variables.nullable().optional(),
  notes: Notes.nullable().optional(),
  code: TransformCode.optional(),
};
const responseFields = {
  responseHeaders: ResponsePredicateFields.responseHeaders.nullable().optional(),
  responseBody: ResponsePredicateFields.responseBody.nullable().optional(),
  responseStatus: ResponsePredicateFields.responseStatus.nullable().optional(),
};

export interface StatusPredicateValue {
  operator: StatusOperator;
  value: number;
}

/** The canonical configuration of a transform (without its code): stored and returned. */
export interface TransformConfig extends StoredPredicates {
  transformMode: TransformMode;
  effect: TransformEffect | null;
  transformActive: boolean;
  priority: number;
  notes: string;
  /** Response transforms only (absent on request transforms). */
  responseHeaders?: z.infer<typeof HeaderPredicate>[];
  responseBody?: z.infer<typeof BodyPredicate>[];
  responseStatus?: StatusPredicateValue[];
}

/** The value an optional field takes when it is not given (or cleared with null), by kind. */
const REQUEST_DEFAULTS = {
  effect: null,
  priority: 0,
  methods: [],
  path: null,
  query: [],
  headers: [],
  body: [],
  token: [],
  variables: [],
  notes: "",
} as const;
const RESPONSE_DEFAULTS = {
  ...REQUEST_DEFAULTS,
  responseHeaders: [],
  responseBody: [],
  responseStatus: [],
} as const;
const DEFAULTS = RESPONSE_DEFAULTS;

/** A fresh copy of a kind's defaults. */
const defaultsOf = (kind: TransformKind): Omit<TransformConfig, "transformMode" | "transformActive"> =>
  structuredClone(kind === "response" ? RESPONSE_DEFAULTS : REQUEST_DEFAULTS) as never;

export type TransformInput = Partial<{
  [K in keyof typeof sharedFields | keyof typeof responseFields]: unknown;
}>;

/** The configuration after a partial update: given fields replace, null clears, the rest stay. `code` is not configuration. */
export function mergeTransformUpdate(current: TransformConfig, input: TransformInput): TransformConfig {
  const next: TransformConfig = { ...current };
  for (const [field, value] of Object.entries(input)) {
    if (value === undefined || field === "code") continue;
    if (value === null && field in DEFAULTS)
      Object.assign(next, { [field]: structuredClone(DEFAULTS[field as keyof typeof DEFAULTS]) });
    else Object.assign(next, { [field]: value });
  }
  return next;
}

/** The canonical configuration of a create body (defaults for what it leaves out). */
export function normaliseTransform(kind: TransformKind, input: TransformInput): TransformConfig {
  const base: TransformConfig = {
    transformMode: input.transformMode as TransformMode,
    transformActive: input.transformActive as boolean,
    ...defaultsOf(kind),
  };
  return mergeTransformUpdate(base, input);
}

/**
 * The canonical configuration part of a stored transform of a kind: its TransformConfig fields
 * and nothing else (code, versions and keys are not configuration).
 */
export function transformConfigOf(kind: TransformKind, stored: TransformConfig): TransformConfig {
  const config: TransformConfig = {
    transformMode: stored.transformMode,
    transformActive: stored.transformActive,
    ...defaultsOf(kind),
  };
  for (const field of Object.keys(config) as (keyof TransformConfig)[])
    if (stored[field] !== undefined) Object.assign(config, { [field]: stored[field] });
  return config;
}

/** The rules that span fields, over a whole configuration. Empty when it may be stored. */
export function transformConfigProblems(config: TransformConfig): { field: string; problem: string }[] {
  return config.transformMode === "conditional" && !config.effect
    ? [{ field: "effect", problem: "must be include or exclude when transformMode is conditional" }]
    : [];
}

const required = { transformMode: enumOf(TRANSFORM_MODES), transformActive: bool, code: TransformCode };
const crossFieldRules = (kind: TransformKind) => (value: TransformInput, ctx: z.RefinementCtx) => {
  for (const { field, problem } of transformConfigProblems(normaliseTransform(kind, value)))
    ctx.addIssue({ code: "custom", path: [field], message: problem });
};

/** POST .../request-transforms: transformMode, transformActive and code required; unknown fields refused. */
export const CreateRequestTransformBody = z
  .object({ ...sharedFields, ...required })
  .strict()
  .superRefine(crossFieldRules("request"));
export const CreateResponseTransformBody = z
  .object({ ...sharedFields, ...responseFields, ...required })
  .strict()
  .superRefine(crossFieldRules("response"));
/** PUT: any subset of the create fields (code only to change it). */
export const UpdateRequestTransformBody = z.object(sharedFields).strict();
export const UpdateResponseTransformBody = z.object({ ...sharedFields, ...responseFields }).strict();

export type UpdateTransformInput = z.infer<typeof UpdateResponseTransformBody>;
export type CreateTransformInput = UpdateTransformInput & {
  transformMode: TransformMode;
  transformActive: boolean;
  code: string;
};
