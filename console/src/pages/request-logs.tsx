/**
 * Request logs (spec 2.11, 4.11; docs/request-logs.md): a proxy's requests, newest first, filtered
 * by time range and status class and paged further back; and one request's detail: its headers
 * (sensitive values as the API's redaction marker) and bodies (JSON pretty-printed).
 *
 * The API lists one proxy's log at a time, newest first, at most `limit` records in an inclusive
 * time range, with `limitReached` when more match: the next page is the same query with
 * `processedBefore` at the oldest record shown (records of that millisecond already shown are
 * dropped by request id, a UUIDv7 that orders them). The status class is not a query of the API:
 * it filters the records of the pages loaded. The service code is the `service-proxy-code` the proxy
 * answered (records written before it was stored show a dash), with its message beneath.
 */
import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { useId } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { orgPath } from "../org-frame";
import type { OrgPageProps } from "../org-routes";
import { Link, navigate, useLocation } from "../router";
import { Field, FormError, fieldError } from "../ui";

const STATUS_CLASSES = [
  { value: "", name: "All statuses" },
  { value: "2", name: "2xx success" },
  { value: "3", name: "3xx redirection" },
  { value: "4", name: "4xx client error" },
  { value: "5", name: "5xx server error" },
] as const;
const PAGE_SIZES = [5, 25, 100, 1000] as const;
const DEFAULT_PAGE_SIZE = 25;

/** What a status means, in words (never only a colour). */
export const statusClassName = (status: number): string =>
  status >= 500
    ? "server error"
    : status >= 400
      ? "client error"
      : status >= 300
        ? "redirection"
        : status >= 200
          ? "success"
          : "informational";

/** The proxies of the organisation (their first 100), for the choice of whose log to read. */
export function useProxies(clientId: string) {
  return useQuery({
    queryKey: ["proxies", clientId, "names"],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/proxies", {
          params: { path: { clientId }, query: { limit: 100 } },
        }),
      ).proxies,
  });
}

/** A `datetime-local` value (local time, no zone) as ISO 8601 in UTC; undefined when empty or unreadable. */
export function isoOfLocal(value: string | null | undefined): string | undefined {
  if (!value) return undefined;
  const time = new Date(value).getTime();
  return Number.isFinite(time) ? new Date(time).toISOString() : undefined;
}

const formatTime = (ms: number) =>
  new Date(ms).toLocaleString(undefined, {
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });

/** The query of the list, as the page's URL carries it (a link or a reload shows the same view). */
function listQueryOf(search: URLSearchParams) {
  const size = Number(search.get("limit"));
  return {
    proxyId: search.get("proxyId") ?? "",
    from: search.get("from") ?? "",
    to: search.get("to") ?? "",
    status: search.get("status") ?? "",
    limit: (PAGE_SIZES as readonly number[]).includes(size) ? size : DEFAULT_PAGE_SIZE,
  };
}

export function RequestLogsPage({ clientId }: OrgPageProps) {
  const { search } = useLocation();
  const query = listQueryOf(search);
  const proxies = useProxies(clientId);
  const proxyId = query.proxyId || proxies.data?.[0]?.proxyId || "";
  const proxy = proxies.data?.find((item) => item.proxyId === proxyId);
  const ids = { proxy: useId(), status: useId(), limit: useId() };
  const pages = useRequestPages(clientId, proxy ? proxyId : "", query);

  return (
    <>
      <h1>Request logs</h1>
      <p>
        What each proxy did with the requests it received, newest first. Headers and bodies are in a request's
        detail; credentials and sensitive headers are stored redacted.
      </p>
      {proxies.isPending && <p>Loading…</p>}
      {proxies.isError && <p role="alert">Error: {errorText(proxies.error)}</p>}
      {proxies.data?.length === 0 && (
        <p>
          No proxies yet, so no requests. <Link href={orgPath(clientId, "proxies")}>Create a proxy</Link>,
          then send requests through it: they are listed here.
        </p>
      )}
      {proxies.data && proxies.data.length > 0 && (
        <>
          <form
            className="panel filters"
            aria-labelledby={`${ids.proxy}-title`}
            onSubmit={(event) => {
              event.preventDefault();
              const form = new FormData(event.currentTarget);
              const next = new URLSearchParams();
              for (const name of ["proxyId", "from", "to", "status", "limit"]) {
                const value = String(form.get(name) ?? "");
                if (value) next.set(name, value);
              }
              navigate(`${orgPath(clientId, "request-logs")}?${next}`);
            }}
          >
            <h2 id={`${ids.proxy}-title`}>Filter</h2>
            <div className="filter-fields">
              <div className="field">
                <label htmlFor={ids.proxy}>Proxy</label>
                <select id={ids.proxy} name="proxyId" defaultValue={proxyId}>
                  {proxies.data.map((item) => (
                    <option key={item.proxyId} value={item.proxyId}>
                      {item.proxyName}
                    </option>
                  ))}
                </select>
              </div>
              <Field
                label="From"
                name="from"
                type="datetime-local"
                step="1"
                defaultValue={query.from}
                error={fieldError(pages.error, "processedAfter")}
              />
              <Field
                label="To"
                name="to"
                type="datetime-local"
                step="1"
                defaultValue={query.to}
                error={fieldError(pages.error, "processedBefore")}
              />
              <div className="field">
                <label htmlFor={ids.status}>Status</label>
                <select id={ids.status} name="status" defaultValue={query.status}>
                  {STATUS_CLASSES.map((item) => (
                    <option key={item.value} value={item.value}>
                      {item.name}
                    </option>
                  ))}
                </select>
              </div>
              <div className="field">
                <label htmlFor={ids.limit}>Requests per page</label>
                <select id={ids.limit} name="limit" defaultValue={String(query.limit)}>
                  {PAGE_SIZES.map((size) => (
                    <option key={size} value={size}>
                      {size}
                    </option>
                  ))}
                </select>
              </div>
            </div>
            <p className="hint">Times are your local time; both ends are included.</p>
            <button type="submit">Show requests</button>
          </form>
          {proxy && (
            <RequestTable
              clientId={clientId}
              proxyId={proxyId}
              proxyName={proxy.proxyName}
              status={query.status}
              pages={pages}
            />
          )}
          {!proxy && proxies.data && <p role="alert">Error: this proxy is not one of the organisation's.</p>}
        </>
      )}
    </>
  );
}

type ListQuery = ReturnType<typeof listQueryOf>;

/** The proxy's requests for the query, page after page further back. */
function useRequestPages(clientId: string, proxyId: string, { from, to, limit }: ListQuery) {
  return useInfiniteQuery({
    queryKey: ["request-logs", clientId, proxyId, from, to, limit],
    initialPageParam: null as null | { before: number; requestId: string },
    queryFn: async ({ pageParam }) => {
      const processedBefore = pageParam ? new Date(pageParam.before).toISOString() : isoOfLocal(to);
      const processedAfter = isoOfLocal(from);
      const answer = must(
        await api.GET("/api/clients/{clientId}/proxies/{proxyId}/requests", {
          params: {
            path: { clientId, proxyId },
            query: {
              limit,
              ...(processedAfter ? { processedAfter } : {}),
              ...(processedBefore ? { processedBefore } : {}),
            },
          },
        }),
      );
      // The page before holds this millisecond's newer records already: keep only the older ones.
      const requests = pageParam
        ? answer.requests.filter((record) => record.requestId < pageParam.requestId)
        : answer.requests;
      return { requests, limitReached: answer.limitReached };
    },
    getNextPageParam: (last) => {
      const oldest = last.requests.at(-1);
      return last.limitReached && oldest ? { before: oldest.processedAt, requestId: oldest.requestId } : null;
    },
    enabled: Boolean(proxyId),
  });
}

type RequestPages = ReturnType<typeof useRequestPages>;

function RequestTable({
  clientId,
  proxyId,
  proxyName,
  status,
  pages,
}: {
  clientId: string;
  proxyId: string;
  proxyName: string;
  status: string;
  pages: RequestPages;
}) {
  const captionId = useId();
  const all = pages.data?.pages.flatMap((page) => page.requests) ?? [];
  const shown = status
    ? all.filter((record) => String(record.proxyData?.status ?? "").startsWith(status))
    : all;
  const statusName = STATUS_CLASSES.find((item) => item.value === status)?.name ?? "All statuses";
  return (
    <section aria-labelledby={captionId}>
      <h2 id={captionId}>Requests of {proxyName}</h2>
      <p>
        <Link href={orgPath(clientId, "proxies", proxyId, "telemetry")}>Telemetry of {proxyName}</Link>
      </p>
      {pages.isPending && <p>Loading…</p>}
      <FormError error={pages.error} fields={["processedAfter", "processedBefore", "limit"]} />
      {pages.data && (
        <p role="status">
          {all.length === 0
            ? "No requests in this range."
            : status
              ? `${shown.length} of the ${all.length} requests loaded are ${statusName.toLowerCase()}.`
              : `${all.length} request${all.length === 1 ? "" : "s"} loaded${pages.hasNextPage ? "; older ones are on the next page" : ""}.`}
        </p>
      )}
      {pages.data && all.length === 0 && (
        <p>
          Requests appear here a moment after they are sent to the proxy's address. Find its address and
          credential on <Link href={orgPath(clientId, "proxies", proxyId)}>the proxy's page</Link>, or widen
          the time range above.
        </p>
      )}
      {shown.length > 0 && (
        <div className="obs-table">
          <table>
            <caption>
              Requests of {proxyName}, newest first{status ? ` (${statusName})` : ""}
            </caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Method</th>
                <th scope="col">Path</th>
                <th scope="col">Status</th>
                <th scope="col">Service code</th>
                <th scope="col">Duration</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((record) => {
                const data = record.proxyData;
                return (
                  <tr key={record.requestId}>
                    <td>
                      <time dateTime={new Date(record.processedAt).toISOString()}>
                        {formatTime(record.processedAt)}
                      </time>
                    </td>
                    <td>{data?.method ?? "—"}</td>
                    <td>
                      <Link
                        href={orgPath(clientId, "request-logs", proxyId, record.requestId)}
                        aria-label={`${data?.method ?? ""} ${data?.apiPath || "/"} at ${formatTime(record.processedAt)}`}
                      >
                        <code>{data?.apiPath || "/"}</code>
                      </Link>
                    </td>
                    <td>{data ? `${data.status} (${statusClassName(data.status)})` : "—"}</td>
                    <td>
                      {data?.code ? <code>{data.code}</code> : "—"}
                      {data?.message && <span className="cell-note">{data.message}</span>}
                    </td>
                    <td className="number">{data ? `${Math.round(data.duration * 1000)} ms` : "—"}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {pages.hasNextPage && (
        <button type="button" disabled={pages.isFetchingNextPage} onClick={() => void pages.fetchNextPage()}>
          {pages.isFetchingNextPage ? "Loading older requests…" : "Load older requests"}
        </button>
      )}
      {pages.data && !pages.hasNextPage && all.length > 0 && <p>These are all the requests in the range.</p>}
    </section>
  );
}

/** A header map as rows (a repeated header has all its values). */
function HeaderTable({ caption, headers }: { caption: string; headers: Record<string, string | string[]> }) {
  const rows = Object.entries(headers).sort(([a], [b]) => a.localeCompare(b));
  if (rows.length === 0) return <p>{caption}: none.</p>;
  return (
    <div className="obs-table">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([name, value]) => (
            <tr key={name}>
              <th scope="row">
                <code>{name}</code>
              </th>
              <td>
                <code>{Array.isArray(value) ? value.join(", ") : value}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A body as stored: JSON pretty-printed, other text as it is, binary as its base64. */
export function bodyText(body: string, encoding: string | null): { text: string; kind: string } {
  if (encoding === "base64") return { text: body, kind: "binary, shown as base64" };
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed !== null && typeof parsed === "object")
      return { text: JSON.stringify(parsed, null, 2), kind: "JSON, pretty-printed" };
  } catch {
    // Not JSON: shown as it is.
  }
  return { text: body, kind: "text" };
}

function Body({
  label,
  body,
  encoding,
  truncated,
  bytes,
}: {
  label: string;
  body: string | null;
  encoding: string | null;
  truncated: boolean | null;
  bytes: number | null;
}) {
  const id = useId();
  if (body === null) return <p>{truncated ? `${label}: not readable, omitted.` : `${label}: none.`}</p>;
  if (body === "") return <p>{label}: empty.</p>;
  const { text, kind } = bodyText(body, encoding);
  return (
    <section aria-labelledby={id}>
      <h4 id={id}>
        {label} ({kind}
        {bytes !== null ? `, ${bytes} bytes` : ""}
        {truncated ? ", cut at 32 KiB" : ""})
      </h4>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling body must be reachable by keyboard */}
      <pre className="body" tabIndex={0}>
        {text}
      </pre>
    </section>
  );
}

/** One request's detail (GET .../requests/{requestId}). */
export function RequestLogPage({ clientId, params }: OrgPageProps) {
  const proxyId = params.proxyId ?? "";
  const requestId = params.requestId ?? "";
  const proxies = useProxies(clientId);
  const proxyName = proxies.data?.find((item) => item.proxyId === proxyId)?.proxyName ?? proxyId;
  const detail = useQuery({
    queryKey: ["request-log", clientId, proxyId, requestId],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/proxies/{proxyId}/requests/{requestId}", {
          params: { path: { clientId, proxyId, requestId } },
        }),
      ).requests[0],
  });
  const back = (
    <p>
      <Link href={`${orgPath(clientId, "request-logs")}?${new URLSearchParams({ proxyId })}`}>
        Back to the requests of {proxyName}
      </Link>
    </p>
  );
  if (detail.isPending) return <p>Loading…</p>;
  if (detail.isError || !detail.data)
    return (
      <>
        <h1>Request not found</h1>
        {detail.isError && <p role="alert">Error: {errorText(detail.error)}</p>}
        {back}
      </>
    );
  const data = detail.data;
  return (
    <>
      <h1>
        Request {data.method ?? ""} <code>{data.path || "/"}</code>
      </h1>
      {back}
      <dl className="details">
        <dt>Proxy</dt>
        <dd>{proxyName}</dd>
        <dt>Received</dt>
        <dd>
          <time dateTime={new Date(data.processedAt).toISOString()}>{formatTime(data.processedAt)}</time>
        </dd>
        <dt>Status</dt>
        <dd>{data.statusCode !== null ? `${data.statusCode} (${statusClassName(data.statusCode)})` : "—"}</dd>
        <dt>Duration</dt>
        <dd>{data.duration !== null ? `${Math.round(data.duration)} ms` : "—"}</dd>
        <dt>Request id</dt>
        <dd>
          <code>{data.requestId}</code>
        </dd>
      </dl>
      <p className="notice">
        Sensitive headers and every secret the request used are stored as <code>[redacted]</code>, wherever
        they appeared (an echoing target's answer included).
      </p>
      <section aria-labelledby="request-part">
        <h2 id="request-part">Request</h2>
        <h3>Headers</h3>
        {data.requestHeaders ? (
          <HeaderTable caption="Request headers" headers={data.requestHeaders} />
        ) : (
          <p>Not recorded.</p>
        )}
        {data.requestHeadersTruncated && <p>Some headers were left out or cut (at most 8 KiB are kept).</p>}
        <h3>Body</h3>
        <Body
          label="Request body"
          body={data.requestBody}
          encoding={data.requestBodyEncoding}
          truncated={data.requestBodyTruncated}
          bytes={data.requestBodyBytes}
        />
      </section>
      <section aria-labelledby="response-part">
        <h2 id="response-part">Response</h2>
        <h3>Headers</h3>
        {data.responseHeaders ? (
          <HeaderTable caption="Response headers" headers={data.responseHeaders} />
        ) : (
          <p>None: the request did not reach the target.</p>
        )}
        {data.responseHeadersTruncated && <p>Some headers were left out or cut (at most 8 KiB are kept).</p>}
        <h3>Body</h3>
        <Body
          label="Response body"
          body={data.responseBody}
          encoding={data.responseBodyEncoding}
          truncated={data.responseBodyTruncated}
          bytes={data.responseBodyBytes}
        />
      </section>
    </>
  );
}
