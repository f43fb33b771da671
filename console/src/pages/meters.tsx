/**
 * The meters of a proxy (spec 2.9, 4.9; docs/meters.md): the list with each meter's usage now
 * against its limits (a bar per limited window, from GET .../meters/{meterId}/usage), create and
 * edit with the whole field set (the form comes from the API's own request schemas), delete.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, type ReactNode, useId, useState } from "react";
import { api } from "../api/client";
import { ApiError, errorText, must } from "../api/errors";
import { orgPath } from "../org-frame";
import type { OrgPageProps } from "../org-routes";
import { Link, navigate } from "../router";
import {
  bodyOf,
  type FieldErrors,
  type FormValue,
  type JsonSchema,
  requestSchema,
  SchemaFields,
  validate,
} from "../schema-form";
import { ConfirmDialog, FormError, Status } from "../ui";
import { useAbilities } from "./credentials-common";

const BASE = "/api/clients/{clientId}/proxies/{proxyId}/meters";
const ITEM = `${BASE}/{meterId}`;
const WINDOWS = ["minute", "hour", "day", "month"] as const;
type Window = (typeof WINDOWS)[number];

const metersKey = (clientId: string, proxyId: string) => ["meters", clientId, proxyId] as const;
const usageKey = (clientId: string, proxyId: string, meterId: string) =>
  ["meter-usage", clientId, proxyId, meterId] as const;

/** The proxy a meters page belongs to (its name for the heading, and the link back to it). */
export function useProxy(clientId: string, proxyId: string) {
  return useQuery({
    queryKey: ["proxy", clientId, proxyId],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/proxies/{proxyId}", {
          params: { path: { clientId, proxyId } },
        }),
      ).proxies[0],
  });
}

/** The link back to the proxy's page. */
export function BackToProxy({
  clientId,
  proxyId,
  name,
}: {
  clientId: string;
  proxyId: string;
  name?: string;
}) {
  return (
    <p className="context">
      Proxy: <Link href={orgPath(clientId, "proxies", proxyId)}>{name ?? proxyId}</Link>
    </p>
  );
}

interface Meter {
  meterId: string;
  meterType: string;
  meterActive: boolean;
  meterMode: string;
  effect?: string | null;
  limits?: Partial<Record<Window, number>> | null;
  limitBy?: string | null;
  notes?: string;
  [field: string]: unknown;
}

const THIS: Record<Window, string> = {
  minute: "this minute",
  hour: "this hour",
  day: "today",
  month: "this month",
};

const meterName = (meter: Meter) =>
  `${meter.meterType === "response_value" ? "Response value" : "Request count"} meter ${meter.meterId.slice(0, 8)}`;

const describeLimits = (limits: Meter["limits"]) => {
  const set = WINDOWS.filter((window) => limits?.[window] !== undefined);
  return set.length === 0
    ? "no limits (counts only)"
    : set.map((window) => `${limits?.[window]} per ${window}`).join(", ");
};

export function MetersPage({ clientId, params, user }: OrgPageProps) {
  const proxyId = params.proxyId ?? "";
  const { write } = useAbilities(clientId, user.userId);
  const proxy = useProxy(clientId, proxyId);
  const queryClient = useQueryClient();
  const meters = useQuery({
    queryKey: metersKey(clientId, proxyId),
    queryFn: async () =>
      must(await api.GET(BASE, { params: { path: { clientId, proxyId } } })).meters as Meter[],
  });
  const [deleting, setDeleting] = useState<Meter | null>(null);
  const remove = useMutation({
    mutationFn: async (meter: Meter) =>
      must(await api.DELETE(ITEM, { params: { path: { clientId, proxyId, meterId: meter.meterId } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: metersKey(clientId, proxyId) }),
  });
  const name = proxy.data?.proxyName;
  return (
    <>
      <BackToProxy clientId={clientId} proxyId={proxyId} name={name} />
      <h1>Meters{name ? ` of ${name}` : ""}</h1>
      <p>
        A meter counts the proxy's requests, or adds up a number from the target's answers, per minute, hour,
        day and month (UTC calendar windows). A limit refuses callers with 429 once a window is full; a meter
        without limits only counts. At most 20 meters per proxy.
      </p>
      {write ? (
        <p>
          <Link href={orgPath(clientId, "proxies", proxyId, "meters", "new")}>New meter</Link>
        </p>
      ) : (
        <ReadOnlyNote />
      )}
      {meters.isPending && <p>Loading…</p>}
      {meters.isError && <p role="alert">Error: {errorText(meters.error)}</p>}
      {remove.isSuccess && <Status>{meterName(remove.variables)} was deleted.</Status>}
      <FormError error={remove.error} />
      {meters.data?.length === 0 && (
        <p>
          This proxy has no meters yet.{" "}
          {write ? (
            <>
              <Link href={orgPath(clientId, "proxies", proxyId, "meters", "new")}>
                Create its first meter
              </Link>{" "}
              to count or limit its traffic.
            </>
          ) : (
            "A member with the DevOps role or above can create one."
          )}
        </p>
      )}
      {meters.data && meters.data.length > 0 && (
        <ul aria-label="Meters" className="rows">
          {meters.data.map((meter) => (
            <li key={meter.meterId}>
              <h2 className="row-title">{meterName(meter)}</h2>
              <p>
                {meter.meterActive ? "Active" : "Inactive (neither counts nor limits)"};{" "}
                {meter.meterMode === "conditional"
                  ? `conditional (${meter.effect ?? "include"} the requests its conditions match)`
                  : "every request"}
                ; {describeLimits(meter.limits)}
                {meter.limitBy ? `; per caller (by ${meter.limitBy})` : ""}.
              </p>
              {meter.notes ? <p className="hint">{meter.notes}</p> : null}
              <Usage clientId={clientId} proxyId={proxyId} meter={meter} />
              <div className="inline-form">
                <Link
                  href={orgPath(clientId, "proxies", proxyId, "meters", meter.meterId)}
                  aria-label={`${write ? "Edit" : "View"} ${meterName(meter)}`}
                >
                  {write ? "Edit" : "View"}
                </Link>
                {write && (
                  <button
                    type="button"
                    className="secondary"
                    aria-label={`Delete ${meterName(meter)}`}
                    onClick={() => setDeleting(meter)}
                  >
                    Delete
                  </button>
                )}
              </div>
            </li>
          ))}
        </ul>
      )}
      <ConfirmDialog
        open={deleting !== null}
        title={`Delete ${deleting ? meterName(deleting) : "this meter"}?`}
        confirmLabel="Delete meter"
        onCancel={() => setDeleting(null)}
        onConfirm={() => {
          if (deleting) remove.mutate(deleting);
          setDeleting(null);
        }}
      >
        <p>
          The meter goes at once, with its counts: from the next request on it neither counts nor limits, and
          its alerts stop. This cannot be undone.
        </p>
      </ConfirmDialog>
    </>
  );
}

interface WindowUsage {
  window: Window;
  value: number;
  limit: number | null;
  windowEnd: string;
}

/** The meter's usage now: a bar per limited window ("3 of 3 this minute"), a count for the others. */
function Usage({ clientId, proxyId, meter }: { clientId: string; proxyId: string; meter: Meter }) {
  const [caller, setCaller] = useState("");
  const callerId = useId();
  const usage = useQuery({
    queryKey: [...usageKey(clientId, proxyId, meter.meterId), caller],
    queryFn: async () =>
      must(
        await api.GET(`${ITEM}/usage`, {
          params: {
            path: { clientId, proxyId, meterId: meter.meterId },
            query: meter.limitBy ? { limitByValue: caller } : {},
          },
        }),
      ),
  });
  const titleId = useId();
  const rows = (usage.data?.usage ?? []) as WindowUsage[];
  return (
    <section aria-labelledby={titleId} className="usage">
      <h3 id={titleId}>Usage of {meterName(meter)}</h3>
      {meter.limitBy && (
        <form
          className="inline-form"
          onSubmit={(event: FormEvent<HTMLFormElement>) => {
            event.preventDefault();
            setCaller(String(new FormData(event.currentTarget).get("caller") ?? ""));
          }}
        >
          <label htmlFor={callerId}>Counts of the caller whose {meter.limitBy} is</label>
          <input id={callerId} name="caller" defaultValue={caller} />
          <button type="submit">Show</button>
        </form>
      )}
      {usage.isPending && <p>Loading usage…</p>}
      {usage.isError && <p role="alert">Error: {errorText(usage.error)}</p>}
      {rows.length > 0 && (
        <ul className="usage-bars">
          {rows.map((row) => (
            <UsageRow key={row.window} row={row} />
          ))}
        </ul>
      )}
      <button
        type="button"
        className="secondary"
        aria-label={`Refresh the usage of ${meterName(meter)}`}
        disabled={usage.isFetching}
        onClick={() => void usage.refetch()}
      >
        Refresh usage
      </button>
    </section>
  );
}

function UsageRow({ row }: { row: WindowUsage }) {
  const id = useId();
  const value = Number(row.value.toFixed(6));
  if (row.limit === null)
    return (
      <li>
        {value} {THIS[row.window]} (no limit)
      </li>
    );
  const text = `${value} of ${row.limit} ${THIS[row.window]}`;
  const full = row.value >= row.limit;
  return (
    <li>
      <label htmlFor={id}>Usage {THIS[row.window]}</label>{" "}
      <meter
        id={id}
        min={0}
        max={row.limit}
        value={Math.min(row.value, row.limit)}
        high={row.limit * 0.8}
        optimum={0}
        aria-valuetext={text}
      />{" "}
      <span>
        {text}
        {full ? " (limit reached: callers get 429 until the window ends)" : ""}
      </span>
    </li>
  );
}

// --- create and edit ---

const LABELS: Record<string, string> = {
  meterType: "Meter type",
  meterActive: "Active",
  meterMode: "Applies to",
  effect: "Effect of the conditions",
  limits: "Limits",
  "limits.minute": "Limit per minute",
  "limits.hour": "Limit per hour",
  "limits.day": "Limit per day",
  "limits.month": "Limit per month",
  extraction: "Value from the response",
  "extraction.location": "Taken from",
  "extraction.path": "Body path",
  "extraction.headerName": "Header name",
  "extraction.defaultValue": "Default value",
  methods: "HTTP methods",
  path: "Path condition",
  query: "Query conditions",
  headers: "Header conditions",
  body: "Body conditions",
  token: "Token claim conditions",
  variables: "Variables",
  limitBy: "Limit per caller by variable",
  alerts: "Alerts",
  "alerts.enabled": "Alerts enabled",
  "alerts.cadence": "Digest every",
  "alerts.notifyTrigger": "Notify on",
  "alerts.alertThreshold": "Alert thresholds",
  "alerts.alertThreshold.minute": "Alert threshold per minute",
  "alerts.alertThreshold.hour": "Alert threshold per hour",
  "alerts.alertThreshold.day": "Alert threshold per day",
  "alerts.alertThreshold.month": "Alert threshold per month",
  notes: "Notes",
};

const HINTS: Record<string, ReactNode> = {
  meterType:
    "request_count adds 1 per request it applies to; response_value adds a number taken from the target's answer (for example its token count).",
  limits:
    "The most a window may accumulate; a window left empty has no limit. Exceeding one answers 429 until the window ends.",
  extraction: "Where the number is in the target's answer (response_value meters only).",
  "extraction.path": "A dot path into the JSON body, such as usage.total_tokens (when taken from the body).",
  "extraction.defaultValue": "Counted when the answer has no number there.",
  meterMode: "all: every request of the proxy; conditional: only the requests the conditions below decide.",
  effect: "include: count the requests matching every condition; exclude: count all the others.",
  methods: "Such as GET or POST.",
  alerts: "A digest in the organisation's notifications (and by e-mail to its admins) once per period.",
};

const METER_PREDICATES = ["methods", "path", "query", "headers", "body", "token"];

/** The errors to show by field: the client's own, else the API's (by field path where one path fits). */
function apiFieldErrors(error: unknown, value: FormValue): FieldErrors {
  if (!(error instanceof ApiError)) return {};
  const errors: FieldErrors = {};
  const paths: string[] = [];
  const walk = (item: unknown, path: string) => {
    if (path) paths.push(path);
    if (item && typeof item === "object")
      for (const [key, inner] of Object.entries(item)) walk(inner, path ? `${path}.${key}` : key);
  };
  walk(value, "");
  for (const [field, message] of Object.entries(error.fields)) {
    const candidates = paths.filter((path) => path === field || path.endsWith(`.${field}`));
    const only = candidates.length === 1 ? candidates[0] : candidates.includes(field) ? field : undefined;
    errors[only ?? field] = message;
  }
  return errors;
}

/** Said instead of the controls a reader or user would be refused. */
export function ReadOnlyNote() {
  return <p className="notice">Your role can read these settings; the DevOps role or above changes them.</p>;
}

function MeterForm({
  method,
  initial,
  submitLabel,
  pending,
  error,
  onSubmit,
  readOnly = false,
}: {
  readOnly?: boolean;
  method: "POST" | "PUT";
  initial: FormValue;
  submitLabel: string;
  pending: boolean;
  error: unknown;
  onSubmit: (body: FormValue) => void;
}) {
  const schema = requestSchema(method, method === "POST" ? BASE : ITEM) as JsonSchema;
  const [value, setValue] = useState<FormValue>(initial);
  const [clientErrors, setClientErrors] = useState<FieldErrors>({});
  const errors = { ...apiFieldErrors(error, value), ...clientErrors };
  const conditional = value.meterMode === "conditional";
  const extraction = value.meterType === "response_value" || (value.extraction ?? null) !== null;
  const common = {
    schema,
    value,
    onChange: setValue,
    errors,
    labels: LABELS,
    hints: HINTS,
    disabled: pending || readOnly,
  };
  const group = (title: string, children: ReactNode) => (
    <fieldset>
      <legend>{title}</legend>
      {children}
    </fieldset>
  );
  return (
    <form
      noValidate
      className="panel"
      aria-label={submitLabel}
      onSubmit={(event) => {
        event.preventDefault();
        const found = validate(schema, value);
        setClientErrors(found);
        if (Object.keys(found).length > 0) return;
        onSubmit(bodyOf(schema, value, initial));
      }}
    >
      {group(
        "What it counts",
        <SchemaFields
          {...common}
          fields={["meterType", "meterActive", ...(extraction ? ["extraction"] : [])]}
        />,
      )}
      <SchemaFields {...common} fields={["limits"]} />
      {group(
        "Which requests",
        <SchemaFields
          {...common}
          fields={["meterMode", ...(conditional ? ["effect", ...METER_PREDICATES] : [])]}
        />,
      )}
      {group("Per caller", <SchemaFields {...common} fields={["variables", "limitBy"]} />)}
      <SchemaFields {...common} fields={["alerts", "notes"]} />
      {Object.keys(clientErrors).length > 0 && (
        <p role="alert" className="error">
          Error: correct the fields marked above ({Object.keys(clientErrors).join(", ")}).
        </p>
      )}
      {error instanceof ApiError && Object.keys(error.fields).length > 0 ? (
        <div role="alert" className="error">
          <p>Error: {error.message}</p>
          <ul>
            {Object.entries(error.fields).map(([field, message]) => (
              <li key={field}>
                {LABELS[field] ?? field}: {message}
              </li>
            ))}
          </ul>
        </div>
      ) : (
        <FormError error={error} />
      )}
      {!readOnly && (
        <button type="submit" disabled={pending}>
          {submitLabel}
        </button>
      )}
    </form>
  );
}

export function MeterNewPage({ clientId, params }: OrgPageProps) {
  const proxyId = params.proxyId ?? "";
  const proxy = useProxy(clientId, proxyId);
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: async (body: FormValue) =>
      must(
        await api.POST(BASE, {
          params: { path: { clientId, proxyId } },
          body: body as never,
        }),
      ).meters[0],
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: metersKey(clientId, proxyId) });
      navigate(orgPath(clientId, "proxies", proxyId, "meters"));
    },
  });
  return (
    <>
      <BackToProxy clientId={clientId} proxyId={proxyId} name={proxy.data?.proxyName} />
      <h1>New meter</h1>
      <p>
        <Link href={orgPath(clientId, "proxies", proxyId, "meters")}>Back to the meters</Link>
      </p>
      <MeterForm
        method="POST"
        initial={{ meterType: "request_count", meterActive: true, meterMode: "all" }}
        submitLabel="Create meter"
        pending={create.isPending}
        error={create.error}
        onSubmit={(body) => create.mutate(body)}
      />
    </>
  );
}

/** The stored meter as form values: the fields a PUT takes, nothing the API set itself. */
function editable(meter: Meter, schema: JsonSchema): FormValue {
  const value: FormValue = {};
  for (const name of Object.keys(schema.properties ?? {}))
    if (meter[name] !== undefined && meter[name] !== null) value[name] = meter[name];
  return value;
}

export function MeterEditPage({ clientId, params, user }: OrgPageProps) {
  const proxyId = params.proxyId ?? "";
  const { write } = useAbilities(clientId, user.userId);
  const meterId = params.meterId ?? "";
  const proxy = useProxy(clientId, proxyId);
  const queryClient = useQueryClient();
  const meter = useQuery({
    queryKey: ["meter", clientId, proxyId, meterId],
    queryFn: async () =>
      must(await api.GET(ITEM, { params: { path: { clientId, proxyId, meterId } } })).meters[0] as Meter,
  });
  const update = useMutation({
    mutationFn: async (body: FormValue) =>
      must(
        await api.PUT(ITEM, {
          params: { path: { clientId, proxyId, meterId } },
          body: body as never,
        }),
      ).meters[0],
    onSuccess: async (saved) => {
      queryClient.setQueryData(["meter", clientId, proxyId, meterId], saved);
      await queryClient.invalidateQueries({ queryKey: metersKey(clientId, proxyId) });
    },
  });
  const back = (
    <p>
      <Link href={orgPath(clientId, "proxies", proxyId, "meters")}>Back to the meters</Link>
    </p>
  );
  if (meter.isPending) return <p>Loading…</p>;
  if (meter.isError || !meter.data)
    return (
      <>
        <h1>Meter not found</h1>
        {meter.isError && <p role="alert">Error: {errorText(meter.error)}</p>}
        {back}
      </>
    );
  const schema = requestSchema("PUT", ITEM) as JsonSchema;
  return (
    <>
      <BackToProxy clientId={clientId} proxyId={proxyId} name={proxy.data?.proxyName} />
      <h1>
        {write ? "Edit" : "Meter:"} {meterName(meter.data)}
      </h1>
      {back}
      {!write && <ReadOnlyNote />}
      {update.isSuccess && <Status>Meter saved. It applies from the next request.</Status>}
      <MeterForm
        key={String(meter.data.updatedAt ?? "")}
        method="PUT"
        initial={editable(meter.data, schema)}
        submitLabel="Save meter"
        pending={update.isPending}
        error={update.error}
        onSubmit={(body) => update.mutate(body)}
        readOnly={!write}
      />
    </>
  );
}
