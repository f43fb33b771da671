/**
 * Telemetry (spec 2.12; docs/telemetry.md), of the organisation or of one proxy: requests (success
 * and error), latency p50/p95/p99, error rate, top countries and top status codes, drawn with uPlot
 * (imported only here: this module is its own chunk). The interval, the date range and the leg
 * (inbound or forwarding) are chosen on the page and kept in its URL. Each chart is an image whose
 * name says what it plots, and its data is also a table, for screen readers and for copying.
 */
import { useQuery } from "@tanstack/react-query";
import { useEffect, useId, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { orgPath } from "../org-frame";
import type { OrgPageProps } from "../org-routes";
import { Link, navigate, useLocation } from "../router";
import { Field, FormError, fieldError } from "../ui";
import { isoOfLocal, useProxies } from "./request-logs";

const INTERVALS = [
  { value: "minute", name: "Minute" },
  { value: "hour", name: "Hour" },
  { value: "day", name: "Day" },
  { value: "month", name: "Month" },
] as const;
type Interval = (typeof INTERVALS)[number]["value"];

const SOURCES = [
  { value: "proxy", name: "Inbound: callers to the gateway" },
  { value: "target", name: "Forwarding: the gateway to targets" },
] as const;
type Source = (typeof SOURCES)[number]["value"];

const TOP = 10;

type Counts = Record<string, number>;
interface Bucket {
  sKey: string;
  countMap: Counts;
  successCountMap: Counts;
  errorCountMap: Counts;
  codeCountMap: Counts;
  countryCountMap: Counts;
  errorRateMap: Counts;
  p50ResponseTimeMap: Counts;
  p95ResponseTimeMap: Counts;
  p99ResponseTimeMap: Counts;
}

/** A bucket key (UTC YYYY-MM-DD-HH-MM, YYYY-MM-DD-HH, YYYY-MM-DD or YYYY-MM) as words. */
export function bucketName(key: string, interval: Interval, short = false): string {
  const [year = "", month = "01", day = "01", hour = "00", minute = "00"] = key.split("-");
  const monthName = new Date(Date.UTC(Number(year), Number(month) - 1, 1)).toLocaleString("en-GB", {
    month: "short",
    timeZone: "UTC",
  });
  if (interval === "month") return `${monthName} ${year}`;
  if (interval === "day")
    return short ? `${Number(day)} ${monthName}` : `${Number(day)} ${monthName} ${year}`;
  const time = `${hour}:${interval === "minute" ? minute : "00"}`;
  if (short) return interval === "minute" ? time : `${Number(day)} ${monthName} ${time}`;
  return `${year}-${month}-${day} ${time} UTC`;
}

const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;
const ms = (value: number | null) => (value === null ? "—" : `${round(value)} ms`);
const of = (map: Counts | undefined, key: string): number => map?.[key] ?? 0;
const optional = (map: Counts | undefined, key: string): number | null =>
  map && typeof map[key] === "number" ? map[key] : null;

/** The top entries of the `<code>:<source>` maps over every bucket, most requests first. */
function top(buckets: Bucket[], pick: (bucket: Bucket) => Counts, source: Source) {
  const sums = new Map<string, number>();
  for (const bucket of buckets)
    for (const [key, count] of Object.entries(pick(bucket) ?? {})) {
      const cut = key.lastIndexOf(":");
      if (key.slice(cut + 1) !== source) continue;
      const code = key.slice(0, cut);
      sums.set(code, (sums.get(code) ?? 0) + count);
    }
  return [...sums.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, TOP)
    .map(([name, count]) => ({ name, count }));
}

const countryNames = (() => {
  try {
    return new Intl.DisplayNames(["en"], { type: "region" });
  } catch {
    return undefined;
  }
})();
const countryName = (code: string) => {
  if (code === "XX") return "Unknown (XX)";
  try {
    const name = countryNames?.of(code);
    return name && name !== code ? `${name} (${code})` : code;
  } catch {
    return code;
  }
};

function queryOf(search: URLSearchParams) {
  const interval = search.get("interval");
  const source = search.get("source");
  return {
    interval: (INTERVALS.some((item) => item.value === interval) ? interval : "hour") as Interval,
    source: (source === "target" ? "target" : "proxy") as Source,
    from: search.get("from") ?? "",
    to: search.get("to") ?? "",
  };
}

/** The organisation's telemetry, with links to each proxy's. */
export function TelemetryPage({ clientId }: OrgPageProps) {
  const proxies = useProxies(clientId);
  return (
    <>
      <h1>Telemetry</h1>
      <p>The traffic of all the organisation's proxies, in every region.</p>
      <Telemetry clientId={clientId} />
      <section aria-labelledby="per-proxy-title">
        <h2 id="per-proxy-title">Per proxy</h2>
        {proxies.isError && <p role="alert">Error: {errorText(proxies.error)}</p>}
        {proxies.data?.length === 0 && (
          <p>
            No proxies yet. <Link href={orgPath(clientId, "proxies")}>Create a proxy</Link> to send traffic
            through it.
          </p>
        )}
        {proxies.data && proxies.data.length > 0 && (
          <ul aria-labelledby="per-proxy-title">
            {proxies.data.map((proxy) => (
              <li key={proxy.proxyId}>
                <Link href={orgPath(clientId, "proxies", proxy.proxyId, "telemetry")}>
                  Telemetry of {proxy.proxyName}
                </Link>
              </li>
            ))}
          </ul>
        )}
      </section>
    </>
  );
}

/** One proxy's telemetry (/organisations/{clientId}/proxies/{proxyId}/telemetry). */
export function ProxyTelemetryPage({ clientId, params }: OrgPageProps) {
  const proxyId = params.proxyId ?? "";
  const proxies = useProxies(clientId);
  const proxy = proxies.data?.find((item) => item.proxyId === proxyId);
  return (
    <>
      <h1>Telemetry of {proxy?.proxyName ?? "the proxy"}</h1>
      <p>
        <Link href={orgPath(clientId, "telemetry")}>The organisation's telemetry</Link>
        {" · "}
        <Link href={`${orgPath(clientId, "request-logs")}?${new URLSearchParams({ proxyId })}`}>
          Request logs of {proxy?.proxyName ?? "the proxy"}
        </Link>
      </p>
      <Telemetry clientId={clientId} proxyId={proxyId} />
    </>
  );
}

function Telemetry({ clientId, proxyId }: { clientId: string; proxyId?: string }) {
  const { path, search } = useLocation();
  const query = queryOf(search);
  const ids = { interval: useId(), source: useId() };
  const telemetry = useQuery({
    queryKey: ["telemetry", clientId, proxyId ?? null, query.interval, query.from, query.to],
    queryFn: async () => {
      const startDate = isoOfLocal(query.from);
      const endDate = isoOfLocal(query.to);
      const range = {
        interval: query.interval,
        ...(startDate ? { startDate } : {}),
        ...(endDate ? { endDate } : {}),
      };
      const answer = proxyId
        ? must(
            await api.GET("/api/clients/{clientId}/proxies/{proxyId}/telemetry", {
              params: { path: { clientId, proxyId }, query: range },
            }),
          )
        : must(
            await api.GET("/api/clients/{clientId}/telemetry", {
              params: { path: { clientId }, query: range },
            }),
          );
      return answer.telemetry as Bucket[];
    },
  });
  const intervalName = query.interval;
  return (
    <>
      <form
        className="panel filters"
        aria-labelledby={`${ids.interval}-title`}
        onSubmit={(event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget);
          const next = new URLSearchParams();
          for (const name of ["interval", "from", "to", "source"]) {
            const value = String(form.get(name) ?? "");
            if (value) next.set(name, value);
          }
          navigate(`${path}?${next}`);
        }}
      >
        <h2 id={`${ids.interval}-title`}>Range</h2>
        <div className="filter-fields">
          <div className="field">
            <label htmlFor={ids.interval}>Interval</label>
            <select id={ids.interval} name="interval" defaultValue={query.interval}>
              {INTERVALS.map((item) => (
                <option key={item.value} value={item.value}>
                  {item.name}
                </option>
              ))}
            </select>
          </div>
          <Field
            label="From"
            name="from"
            type="datetime-local"
            defaultValue={query.from}
            error={fieldError(telemetry.error, "startDate")}
          />
          <Field
            label="To"
            name="to"
            type="datetime-local"
            defaultValue={query.to}
            error={fieldError(telemetry.error, "endDate")}
          />
          <div className="field">
            <label htmlFor={ids.source}>Leg</label>
            <select id={ids.source} name="source" defaultValue={query.source}>
              {SOURCES.map((item) => (
                <option key={item.value} value={item.value}>
                  {item.name}
                </option>
              ))}
            </select>
          </div>
        </div>
        <p className="hint">
          From and To are your local time, both included; empty, the most recent 100 {intervalName}s with
          traffic are shown. Buckets are UTC. Telemetry follows the requests within 30 seconds.
        </p>
        <div className="button-row">
          <button type="submit">Show telemetry</button>
          <button
            type="button"
            className="secondary"
            disabled={telemetry.isFetching}
            onClick={() => void telemetry.refetch()}
          >
            Refresh
          </button>
        </div>
      </form>
      {telemetry.isPending && <p>Loading…</p>}
      <FormError error={telemetry.error} fields={["interval", "startDate", "endDate", "limit"]} />
      {telemetry.data && (
        <Charts
          buckets={telemetry.data}
          interval={query.interval}
          source={query.source}
          empty={
            <p>
              No traffic in this range. Requests sent through{" "}
              {proxyId ? "this proxy" : <Link href={orgPath(clientId, "proxies")}>a proxy</Link>} appear here
              within 30 seconds; widen the range or choose another interval.
            </p>
          }
        />
      )}
    </>
  );
}

function Charts({
  buckets,
  interval,
  source,
  empty,
}: {
  buckets: Bucket[];
  interval: Interval;
  source: Source;
  empty: React.ReactNode;
}) {
  const leg = source === "proxy" ? "inbound" : "forwarding";
  const rows = buckets.map((bucket) => ({
    key: bucket.sKey,
    name: bucketName(bucket.sKey, interval),
    short: bucketName(bucket.sKey, interval, true),
    total: of(bucket.countMap, source),
    success: of(bucket.successCountMap, source),
    error: of(bucket.errorCountMap, source),
    p50: optional(bucket.p50ResponseTimeMap, source),
    p95: optional(bucket.p95ResponseTimeMap, source),
    p99: optional(bucket.p99ResponseTimeMap, source),
    errorRate: optional(bucket.errorRateMap, source),
  }));
  const withTraffic = rows.filter((row) => row.total > 0);
  const totals = withTraffic.reduce(
    (sum, row) => ({
      total: sum.total + row.total,
      success: sum.success + row.success,
      error: sum.error + row.error,
    }),
    { total: 0, success: 0, error: 0 },
  );
  if (withTraffic.length === 0) return <section aria-label="Charts">{empty}</section>;
  const countries = top(buckets, (bucket) => bucket.countryCountMap, source);
  const codes = top(buckets, (bucket) => bucket.codeCountMap, source);
  const span = `${withTraffic[0]?.name} to ${withTraffic.at(-1)?.name}`;
  const labels = withTraffic.map((row) => row.short);
  return (
    <>
      <p role="status">
        {totals.total} requests ({leg} leg): {totals.success} successful, {totals.error} errors, in{" "}
        {withTraffic.length} {interval}
        {withTraffic.length === 1 ? "" : "s"} with traffic, {span}.
      </p>
      <ChartSection
        title="Requests"
        description={`Requests per ${interval}, successful (2xx, 3xx) and errors (4xx, 5xx), ${leg} leg, ${span}`}
        chart={{
          labels,
          kind: "bars",
          yLabel: "Requests",
          whole: true,
          format: (value) => String(value),
          series: [
            { label: "Successful", values: withTraffic.map((row) => row.success), color: "#1b6e35" },
            { label: "Errors", values: withTraffic.map((row) => row.error), color: "#b3261e" },
          ],
        }}
        columns={[`${capital(interval)} (UTC)`, "Requests", "Successful", "Errors"]}
        rows={withTraffic.map((row) => [row.name, row.total, row.success, row.error])}
      />
      <ChartSection
        title="Latency"
        description={`Response time per ${interval}, 50th, 95th and 99th percentiles in milliseconds, ${leg} leg, ${span}`}
        chart={{
          labels,
          kind: "lines",
          yLabel: "Milliseconds",
          format: (value) => `${round(value)}`,
          series: [
            { label: "p50", values: withTraffic.map((row) => row.p50), color: "#0b57d0" },
            { label: "p95", values: withTraffic.map((row) => row.p95), color: "#8a4b00", dash: [8, 4] },
            { label: "p99", values: withTraffic.map((row) => row.p99), color: "#7b1fa2", dash: [2, 3] },
          ],
        }}
        columns={[`${capital(interval)} (UTC)`, "p50", "p95", "p99"]}
        rows={withTraffic.map((row) => [row.name, ms(row.p50), ms(row.p95), ms(row.p99)])}
      />
      <ChartSection
        title="Error rate"
        description={`Share of answers that were errors (4xx, 5xx) per ${interval}, in percent, ${leg} leg, ${span}`}
        chart={{
          labels,
          kind: "lines",
          yLabel: "Percent",
          max: 100,
          format: (value) => `${round(value)}%`,
          series: [
            {
              label: "Error rate",
              values: withTraffic.map((row) => (row.errorRate === null ? null : row.errorRate * 100)),
              color: "#b3261e",
            },
          ],
        }}
        columns={[`${capital(interval)} (UTC)`, "Error rate"]}
        rows={withTraffic.map((row) => [
          row.name,
          row.errorRate === null ? "—" : `${round(row.errorRate * 100)}%`,
        ])}
      />
      <ChartSection
        title="Top countries"
        description={`Requests by the caller's country, top ${TOP}, ${leg} leg, ${span}`}
        chart={{
          labels: countries.map((item) => item.name),
          kind: "bars",
          yLabel: "Requests",
          whole: true,
          format: (value) => String(value),
          series: [{ label: "Requests", values: countries.map((item) => item.count), color: "#0b57d0" }],
        }}
        columns={["Country", "Requests"]}
        rows={countries.map((item) => [countryName(item.name), item.count])}
      />
      <ChartSection
        title="Top status codes"
        description={`Requests by HTTP status, top ${TOP}, ${leg} leg, ${span}`}
        chart={{
          labels: codes.map((item) => item.name),
          kind: "bars",
          yLabel: "Requests",
          whole: true,
          format: (value) => String(value),
          series: [{ label: "Requests", values: codes.map((item) => item.count), color: "#5b5b5b" }],
        }}
        columns={["Status", "Requests"]}
        rows={codes.map((item) => [item.name, item.count])}
      />
    </>
  );
}

const capital = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

interface ChartSpec {
  labels: string[];
  kind: "bars" | "lines";
  yLabel: string;
  max?: number;
  /** Whole numbers only on the y axis (counts). */
  whole?: boolean;
  format: (value: number) => string;
  series: { label: string; values: (number | null)[]; color: string; dash?: number[] }[];
}

function ChartSection({
  title,
  description,
  chart,
  columns,
  rows,
}: {
  title: string;
  description: string;
  chart: ChartSpec;
  columns: string[];
  rows: (string | number)[][];
}) {
  const id = useId();
  return (
    <section aria-labelledby={id} className="chart-section">
      <h2 id={id}>{title}</h2>
      <Chart label={`Chart: ${description}.`} spec={chart} />
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a long table scrolls; the keyboard reaches it */}
      <section className="obs-table chart-data" aria-label={`Data of the ${title} chart`} tabIndex={0}>
        <table>
          <caption>Data of the chart: {description}</caption>
          <thead>
            <tr>
              {columns.map((column, index) => (
                <th key={column} scope="col" className={index > 0 ? "number" : undefined}>
                  {column}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={String(row[0])}>
                {row.map((cell, index) =>
                  index === 0 ? (
                    <th key={columns[index]} scope="row">
                      {cell}
                    </th>
                  ) : (
                    <td key={columns[index]} className="number">
                      {cell}
                    </td>
                  ),
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </section>
  );
}

const WHOLE_STEPS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000, 1e6, 1e7,
];
const AXIS_FONT = "13px system-ui, sans-serif";
const LABEL_FONT = "600 13px system-ui, sans-serif";

/** A uPlot chart over categories (the buckets or names, evenly spaced), as one image with a name. */
function Chart({ label, spec }: { label: string; spec: ChartSpec }) {
  const ref = useRef<HTMLDivElement>(null);
  // Drawn again only when what it shows changes (not on every render of the page).
  const shape = JSON.stringify(spec);
  const current = useRef(spec);
  current.current = spec;
  // biome-ignore lint/correctness/useExhaustiveDependencies: `shape` stands for the spec's content
  useEffect(() => {
    const spec = current.current;
    const element = ref.current;
    if (!element) return;
    const count = spec.labels.length;
    const x = spec.labels.map((_, index) => index);
    const every = Math.max(1, Math.ceil(count / 6));
    const ticks = x.filter((index) => index % every === 0);
    const bars = spec.series.length;
    const width = Math.max(320, element.clientWidth || 640);
    const peak = Math.max(0, ...spec.series.flatMap((series) => series.values.map((value) => value ?? 0)));
    const options: uPlot.Options = {
      width,
      height: 260,
      legend: { live: false },
      cursor: { show: false },
      scales: {
        x: { time: false, range: () => [-0.5, count - 0.5] },
        y: { range: () => [0, spec.max ?? (peak > 0 ? peak * 1.15 : 1)] },
      },
      axes: [
        {
          font: AXIS_FONT,
          stroke: "#1a1a1a",
          grid: { show: false },
          splits: () => ticks,
          values: (_u, splits) => splits.map((value) => spec.labels[value] ?? ""),
          size: 40,
        },
        {
          font: AXIS_FONT,
          labelFont: LABEL_FONT,
          stroke: "#1a1a1a",
          grid: { stroke: "#e3e3e3" },
          label: spec.yLabel,
          labelSize: 24,
          size: 56,
          ...(spec.whole ? { incrs: WHOLE_STEPS } : {}),
          values: (_u, splits) => splits.map((value) => spec.format(value)),
        },
      ],
      series: [
        { label: "Bucket" },
        ...spec.series.map(
          (series, index): uPlot.Series => ({
            label: series.label,
            stroke: series.color,
            width: 2,
            ...(series.dash ? { dash: series.dash } : {}),
            ...(spec.kind === "bars"
              ? {
                  fill: series.color,
                  paths: uPlot.paths.bars?.({
                    size: [bars === 1 ? 0.6 : 0.8 / bars, 60],
                    align: bars === 1 ? 0 : index === 0 ? -1 : 1,
                  }),
                  points: { show: false },
                }
              : { points: { show: true, size: 7, fill: series.color }, spanGaps: false }),
          }),
        ),
      ],
    };
    const plot = new uPlot(options, [x, ...spec.series.map((series) => series.values)], element);
    // Follows the width of the page (a resized window, a zoomed text).
    const resize = new ResizeObserver(() => {
      const next = Math.max(320, element.clientWidth);
      if (next !== plot.width) plot.setSize({ width: next, height: 260 });
    });
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [shape]);
  return <div ref={ref} role="img" aria-label={label} className="chart" />;
}
