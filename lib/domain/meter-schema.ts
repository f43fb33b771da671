/**
 * Meters (spec 2.9, 4.9): the request bodies, the canonical configuration that is stored, returned
 * by the API and evaluated by the data plane, and the cross-field rules (docs/meters.md, "API").
 *
 * Shape checks are zod schemas (400 naming the field). The rules that span fields
 * (`meterConfigProblems`) are one plain function over the canonical configuration, so a create and
 * a partial update (PUT) are checked the same way: the PUT checks the stored meter merged with the
 * change (`mergeMeterUpdate`), not the change alone.
 *
 * Decisions the spec leaves open:
 * - `effect` is required (include or exclude) when `meterMode` is `conditional`; with mode `all`
 *   it is kept as given and ignored.
 * - `limits`, `extraction` and `alerts` are replaced as a whole by a PUT; `null` clears each
 *   optional field (back to its default: null, [] or "").
 * - `limits` windows are positive numbers (fractions allowed: response values may be fractional);
 *   `{}` is stored as null (no limits).
 * - `alertThreshold` windows are positive numbers or null (null and absent windows are ignored);
 *   at least one positive window is required when `notifyTrigger` is `threshold`.
 * - `extraction.defaultValue` is a number of at least 0 (counters only grow).
 * - `limitBy` must name one of the meter's `variables`.
 */
import { z } from "zod";
import {
  BodyPredicate,
  HeaderPredicate,
  PredicateFields,
  type StoredPredicates,
} from "#lib/domain/predicates/schema.ts";
import {
  ALERT_CADENCES,
  EXTRACTION_LOCATIONS,
  METER_EFFECTS,
  METER_MODES,
  METER_TYPES,
  type MeterEffect,
  type MeterMode,
  type MeterType,
  NOTIFY_TRIGGERS,
  type NotifyTrigger,
} from "#lib/shared/meter-constants.ts";
import { METER_WINDOWS, type MeterWindow } from "#lib/shared/meter-windows.ts";

export {
  ALERT_CADENCES,
  type AlertCadence,
  EXTRACTION_LOCATIONS,
  MAX_METERS_PER_PROXY,
  METER_EFFECTS,
  METER_MODES,
  METER_TYPES,
  type MeterEffect,
  type MeterMode,
  type MeterType,
  NOTIFY_TRIGGERS,
  type NotifyTrigger,
} from "#lib/shared/meter-constants.ts";
export { METER_WINDOWS, type MeterWindow };

export const MAX_METER_NOTES_LENGTH = 1000;
/** Largest limit, threshold or default value: integers stay exact in JavaScript up to 2^53. */
export const MAX_METER_VALUE = Number.MAX_SAFE_INTEGER;

const oneOf = (values: readonly string[]) => `must be one of ${values.join(", ")}`;
/** An enum whose missing value says "is required" and whose wrong value lists the allowed ones. */
const enumOf = <T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, {
    error: (issue) => (issue.input === undefined ? "is required" : oneOf(values)),
  });
const bool = z.boolean({
  error: (issue) => (issue.input === undefined ? "is required" : "must be true or false"),
});

const Positive = z
  .number({ error: "must be a positive number" })
  .positive("must be a positive number")
  .max(MAX_METER_VALUE, `at most ${MAX_METER_VALUE}`);

const windows = <T extends z.ZodType>(value: T, what: string) =>
  z
    .object(
      { minute: value.optional(), hour: value.optional(), day: value.optional(), month: value.optional() },
      { error: `must be an object of ${what} per window (minute, hour, day, month)` },
    )
    .strict();

/** Maximum accumulated value per window; a window left out has no limit. */
export const MeterLimits = windows(Positive, "limits");

export const MeterExtraction = z
  .object(
    {
      location: enumOf(EXTRACTION_LOCATIONS),
      /** A dot path into the JSON response body, as the body predicates' paths. */
      path: BodyPredicate.shape.path.optional(),
      /** Lower-cased, as the header predicates' names. */
      headerName: HeaderPredicate.shape.name.optional(),
      defaultValue: z
        .number({ error: "must be a number" })
        .min(0, "must be a number of at least 0")
        .max(MAX_METER_VALUE, `at most ${MAX_METER_VALUE}`)
        .optional(),
    },
    { error: "must be an object" },
  )
  .strict();

export const MeterAlerts = z
  .object(
    {
      enabled: bool,
      cadence: enumOf(ALERT_CADENCES).optional(),
      notifyTrigger: enumOf(NOTIFY_TRIGGERS).optional(),
      alertThreshold: windows(Positive.nullable(), "thresholds").optional(),
    },
    { error: "must be an object" },
  )
  .strict();

const Notes = z
  .string({ error: "must be a string" })
  .trim()
  .max(MAX_METER_NOTES_LENGTH, `at most ${MAX_METER_NOTES_LENGTH} characters`);

/**
 * What every description of `limitBy` says (the request and response schemas, the create and
 * update operations, so OpenAPI and the MCP tools): a value the caller chooses limits nobody.
 */
export const LIMIT_BY_WARNING =
  "Per-caller limits hold only for a value the caller cannot choose: bind `limitBy` to a claim of a verified token (a `token` variable of a jwtVerify proxy credential, such as `sub`). A value from a header, the query or the body is the caller's choice: every invented value gets a fresh count of its own, so such a limit stops no one who varies it. Bound the total with a limit on a meter without `limitBy` (or the plan's rate limit).";

const LimitBy = z
  .string({ error: "must be a string naming one of the meter's variables" })
  .min(1)
  .describe(`Per-caller limits: the name of one of the meter's variables. ${LIMIT_BY_WARNING}`);

/** Every field a PUT may change: each optional; null clears an optional field. */
const meterFields = {
  meterType: enumOf(METER_TYPES).optional(),
  meterActive: bool.optional(),
  meterMode: enumOf(METER_MODES).optional(),
  effect: enumOf(METER_EFFECTS).nullable().optional(),
  limits: MeterLimits.nullable().optional(),
  extraction: MeterExtraction.nullable().optional(),
  methods: PredicateFields.methods.nullable().optional(),
  path: PredicateFields.path.nullable().optional(),
  query: PredicateFields.query.nullable().optional(),
  headers: PredicateFields.headers.nullable().optional(),
  body: PredicateFields.body.nullable().optional(),
  token: PredicateFields.token.nullable().optional(),
  variables: PredicateFields.variables.nullable().optional(),
  limitBy: LimitBy.nullable().optional(),
  alerts: MeterAlerts.nullable().optional(),
  notes: Notes.nullable().optional(),
};

/** PUT .../meters/{meterId} body: any subset of the create fields. Unknown fields are rejected. */
export const UpdateMeterBody = z.object(meterFields).strict();
export type UpdateMeterInput = z.infer<typeof UpdateMeterBody>;

/** The canonical configuration of a meter: stored, returned by the API, evaluated by the data plane. */
export interface MeterConfig extends StoredPredicates {
  meterType: MeterType;
  meterActive: boolean;
  meterMode: MeterMode;
  effect: MeterEffect | null;
  limits: Partial<Record<MeterWindow, number>> | null;
  extraction: z.infer<typeof MeterExtraction> | null;
  limitBy: string | null;
  alerts: {
    enabled: boolean;
    cadence?: MeterWindow;
    notifyTrigger?: NotifyTrigger;
    alertThreshold?: Partial<Record<MeterWindow, number>>;
  } | null;
  notes: string;
}

/** The value an optional field takes when it is not given (or cleared with null). */
const DEFAULTS: Omit<MeterConfig, "meterType" | "meterActive"> = {
  meterMode: "all",
  effect: null,
  limits: null,
  extraction: null,
  methods: [],
  path: null,
  query: [],
  headers: [],
  body: [],
  token: [],
  variables: [],
  limitBy: null,
  alerts: null,
  notes: "",
};

/** Windows given a value, in window order; none is null. */
function definedWindows(
  value: Partial<Record<MeterWindow, number | null | undefined>>,
): Partial<Record<MeterWindow, number>> | null {
  const kept = METER_WINDOWS.flatMap((window) => {
    const n = value[window];
    return typeof n === "number" ? [[window, n] as const] : [];
  });
  return kept.length > 0 ? Object.fromEntries(kept) : null;
}

/** The canonical configuration part of a stored meter: its MeterConfig fields and nothing else. */
export function meterConfigOf(stored: MeterConfig): MeterConfig {
  const config: MeterConfig = { ...DEFAULTS, meterType: stored.meterType, meterActive: stored.meterActive };
  for (const field of Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[])
    Object.assign(config, { [field]: stored[field] });
  return config;
}
/** One validated field in its canonical form (null and {} limits become the default). */
function canonical<K extends keyof typeof DEFAULTS>(
  field: K,
  value: NonNullable<UpdateMeterInput[K]>,
): MeterConfig[K] {
  if (field === "limits")
    return definedWindows(value as NonNullable<UpdateMeterInput["limits"]>) as MeterConfig[K];
  if (field === "alerts") {
    const { alertThreshold, ...alerts } = value as NonNullable<UpdateMeterInput["alerts"]>;
    const thresholds = alertThreshold ? definedWindows(alertThreshold) : null;
    return { ...alerts, ...(thresholds ? { alertThreshold: thresholds } : {}) } as MeterConfig[K];
  }
  return value as MeterConfig[K];
}

/**
 * A meter's configuration after a partial update: every field the input gives replaces the
 * stored one (null clears an optional field back to its default); fields left out keep values.
 */
export function mergeMeterUpdate(current: MeterConfig, input: UpdateMeterInput): MeterConfig {
  const next: MeterConfig = { ...current };
  for (const [field, value] of Object.entries(input) as [keyof UpdateMeterInput, unknown][]) {
    if (value === undefined) continue;
    if (field === "meterType" || field === "meterActive") {
      Object.assign(next, { [field]: value });
      continue;
    }
    Object.assign(next, {
      [field]: value === null ? DEFAULTS[field] : canonical(field, value as never),
    });
  }
  return next;
}

/** The canonical configuration of a create body (defaults for what it leaves out). */
export function normaliseMeter(input: CreateMeterInput): MeterConfig {
  const { meterType, meterActive, ...rest } = input;
  return mergeMeterUpdate({ ...DEFAULTS, meterType, meterActive }, rest);
}

export interface MeterProblem {
  /** The field, dotted for nested ones (`extraction.path`). */
  field: string;
  problem: string;
}

/**
 * The rules that span fields, over a whole configuration (a create, or a stored meter merged
 * with a PUT). Empty when the meter may be stored.
 */
export function meterConfigProblems(config: MeterConfig): MeterProblem[] {
  const problems: MeterProblem[] = [];
  const add = (field: string, problem: string) => problems.push({ field, problem });

  if (config.meterType === "response_value" && !config.extraction)
    add("extraction", "is required when meterType is response_value");
  if (config.extraction?.location === "body" && !config.extraction.path)
    add("extraction.path", "is required when extraction.location is body");
  if (config.extraction?.location === "header" && !config.extraction.headerName)
    add("extraction.headerName", "is required when extraction.location is header");

  if (config.meterMode === "conditional" && !config.effect)
    add("effect", "must be include or exclude when meterMode is conditional");

  if (config.limitBy !== null && !config.variables.some((variable) => variable.name === config.limitBy))
    add(
      "limitBy",
      config.variables.length === 0
        ? "must name one of the meter's variables, and the meter has none"
        : `must name one of the meter's variables (${config.variables.map((v) => v.name).join(", ")})`,
    );

  const alerts = config.alerts;
  if (alerts?.enabled) {
    if (!alerts.cadence) add("alerts.cadence", "is required when alerts.enabled is true");
    if (!alerts.notifyTrigger) add("alerts.notifyTrigger", "is required when alerts.enabled is true");
  }
  if (alerts?.notifyTrigger === "threshold") {
    if (!alerts.alertThreshold)
      add(
        "alerts.alertThreshold",
        "is required when notifyTrigger is threshold, with at least one window (minute, hour, day, month) a positive number",
      );
  }
  return problems;
}

/** POST .../meters body (spec 4.9): meterType and meterActive required. Unknown fields are rejected. */
export const CreateMeterBody = z
  .object({ ...meterFields, meterType: enumOf(METER_TYPES), meterActive: bool })
  .strict()
  .superRefine((value, ctx) => {
    for (const { field, problem } of meterConfigProblems(normaliseMeter(value)))
      ctx.addIssue({ code: "custom", path: field.split("."), message: problem });
  });
export type CreateMeterInput = z.infer<typeof CreateMeterBody>;
