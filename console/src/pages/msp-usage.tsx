/**
 * The MSP's usage report of a month (GET /api/msps/{mspId}/usage): per managed client, requests,
 * API seconds and their price at the client's and at the MSP's rates, the totals over every client,
 * a page of rows at a time, and the same report as a CSV file (the API's `text/csv` answer, saved
 * through a Blob and an `<a download>`).
 */
import { keepPreviousData, useMutation, useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { api } from "../api/client";
import { must } from "../api/errors";
import { Pager } from "../pager";
import { Link } from "../router";
import { Field, FormError, fieldError, Status } from "../ui";
import { mspKeys, mspPath } from "./msp-common";
import type { MspPageProps } from "./msp-routes";

const PAGE_SIZE = 50;
/** The most rows the API answers at once: every client an MSP may manage, so the CSV holds them all. */
const ALL_ROWS = 1000;

const thisMonth = () => new Date().toISOString().slice(0, 7);
/** Dollars exact to 9 places, as the report gives them (amounts are fractions of a cent). */
const amount = (value: number) => `$${value.toFixed(9).replace(/0{1,6}$/, "")}`;

export function MspUsagePage({ mspId }: MspPageProps) {
  const [month, setMonth] = useState(thisMonth);
  const [draft, setDraft] = useState(month);
  const [page, setPage] = useState(1);
  const report = useQuery({
    queryKey: [...mspKeys.usage(mspId), month, page],
    queryFn: async () => {
      const answer = must(
        await api.GET("/api/msps/{mspId}/usage", {
          params: { path: { mspId }, query: { month, page, limit: PAGE_SIZE } },
        }),
      );
      // The JSON answer (the CSV alternative comes only when asked for, below).
      if (typeof answer === "string") throw new Error("The report came as CSV instead of JSON");
      return answer;
    },
    placeholderData: keepPreviousData,
  });
  const data = report.data;
  return (
    <>
      <h1>Usage report</h1>
      <p>
        Per managed client for a calendar month (UTC): the requests its proxies answered, the API seconds they
        took (the sum of their durations) and their price at the client's rate and at the MSP's rate (retail
        $0.0001 an API second). Rates are today's.
      </p>
      <form
        noValidate
        aria-label="Month of the report"
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          setPage(1);
          setMonth(draft);
        }}
      >
        <Field
          label="Month"
          name="month"
          type="month"
          hint="A calendar month, YYYY-MM."
          value={draft}
          onChange={(event) => setDraft(event.target.value)}
          error={fieldError(report.error, "month")}
        />
        <button type="submit">Show month</button>
      </form>
      {report.isPending && <p>Loading…</p>}
      {report.isError && <FormError error={report.error} fields={["month"]} />}
      {data && data.usage.length === 0 && (
        <p>
          No managed clients to report on.{" "}
          <Link href={`${mspPath(mspId)}#new-client-title`}>Create a client</Link> first; its usage shows here
          from its first request.
        </p>
      )}
      {data && data.usage.length > 0 && (
        <>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls sideways takes focus to scroll by keyboard */}
          <section aria-labelledby="usage-table-title" className="table-scroll" tabIndex={0}>
            <table>
              <caption id="usage-table-title">Usage in {data.month}</caption>
              <thead>
                <tr>
                  <th scope="col">Client</th>
                  <th scope="col">Billed to</th>
                  <th scope="col">Requests</th>
                  <th scope="col">API seconds</th>
                  <th scope="col">At the client's rate</th>
                  <th scope="col">At the MSP's rate</th>
                </tr>
              </thead>
              <tbody>
                {data.usage.map((row) => (
                  <tr key={row.clientId}>
                    <th scope="row">
                      <Link href={mspPath(mspId, "clients", row.clientId)}>{row.clientName}</Link>
                    </th>
                    <td>{row.billingTo === "msp" ? "MSP" : "Client"}</td>
                    <td>{row.requests}</td>
                    <td>{row.apiSeconds.toFixed(3)}</td>
                    <td>
                      {amount(row.amountAtClientRates)} (rate {row.clientRate})
                    </td>
                    <td>
                      {amount(row.amountAtMspRates)} (rate {row.mspRate})
                    </td>
                  </tr>
                ))}
              </tbody>
              <tfoot>
                <tr>
                  <th scope="row">All clients</th>
                  <td />
                  <td>{data.totals.requests}</td>
                  <td>{data.totals.apiSeconds.toFixed(3)}</td>
                  <td>{amount(data.totals.amountAtClientRates)}</td>
                  <td>{amount(data.totals.amountAtMspRates)}</td>
                </tr>
              </tfoot>
            </table>
          </section>
          <Pager label="the report" pagination={data.pagination} onPage={setPage} />
          <CsvDownload key={data.month} mspId={mspId} month={data.month} />
        </>
      )}
    </>
  );
}

/** The month as a CSV file: fetched as `text/csv`, then saved by the browser from a Blob. */
function CsvDownload({ mspId, month }: { mspId: string; month: string }) {
  const link = useRef<HTMLAnchorElement>(null);
  const [file, setFile] = useState<{ url: string; name: string } | null>(null);
  useEffect(() => () => (file ? URL.revokeObjectURL(file.url) : undefined), [file]);
  const download = useMutation({
    mutationFn: async () => {
      const result = await api.GET("/api/msps/{mspId}/usage", {
        params: { path: { mspId }, query: { month, page: 1, limit: ALL_ROWS } },
        headers: { Accept: "text/csv" },
        parseAs: "text",
      });
      return must(result as { data?: string; error?: unknown; response: Response });
    },
    onSuccess: (text) => {
      const url = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
      setFile({ url, name: `usage-${month}.csv` });
    },
  });
  // Once the file is ready the link saves it; it stays for another save.
  useEffect(() => {
    if (file) link.current?.click();
  }, [file]);
  return (
    <section aria-labelledby="csv-title">
      <h2 id="csv-title">Download</h2>
      <p>Every client's row of {month}, with the month and currency on each, as comma-separated values.</p>
      <button type="button" onClick={() => download.mutate()} disabled={download.isPending}>
        Download CSV of {month}
      </button>
      <FormError error={download.error} />
      {file && (
        <Status>
          Ready:{" "}
          <a ref={link} href={file.url} download={file.name}>
            {file.name}
          </a>
        </Status>
      )}
    </section>
  );
}
