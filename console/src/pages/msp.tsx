/**
 * The MSP's managed clients (spec 4.14): the list, a page at a time, each a link to its page and to
 * its console; a new client (the form of POST /api/msps/{mspId}/clients's schema); and the MSP's
 * own configuration (its rates, which bound its clients' rates from below).
 */
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { PAGE_SIZE, Pager } from "../pager";
import { Link, navigate, useLocation } from "../router";
import { requestSchema, SchemaFields } from "../schema-form";
import { FormError, Status } from "../ui";
import { day, mspKeys, mspPath } from "./msp-common";
import { useSchemaForm } from "./msp-form";
import type { MspPageProps } from "./msp-routes";

const CREATE = requestSchema("POST", "/api/msps/{mspId}/clients");

/** The MSP's own configuration (msp_user and above), shared with the client page's rate explanation. */
export function useMspConfiguration(mspId: string) {
  return useQuery({
    queryKey: mspKeys.configuration(mspId),
    queryFn: async () =>
      must(await api.GET("/api/msps/{mspId}/configurations", { params: { path: { mspId }, query: {} } }))
        .configuration,
  });
}

export function MspClientsPage({ mspId }: MspPageProps) {
  const { search } = useLocation();
  const detached = search.get("detached");
  const [page, setPage] = useState(1);
  const clients = useQuery({
    queryKey: [...mspKeys.clients(mspId), page],
    queryFn: async () =>
      must(
        await api.GET("/api/msps/{mspId}/clients", {
          params: { path: { mspId }, query: { page, limit: PAGE_SIZE } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const list = clients.data?.clients;
  return (
    <>
      <h1>Managed clients</h1>
      {detached && (
        <Status>
          {detached} was detached: it keeps its members, resources and history, and your team no longer
          reaches it.
        </Status>
      )}
      <section aria-labelledby="clients-title">
        <h2 id="clients-title">Clients</h2>
        {clients.isPending && <p>Loading…</p>}
        {clients.isError && <p role="alert">Error: {errorText(clients.error)}</p>}
        {list?.length === 0 && (
          <p>
            This MSP manages no clients yet. <a href="#new-client-title">Create the first one</a> below: it is
            billed to the MSP, and your team reaches it from the switcher at the top.
          </p>
        )}
        {list && list.length > 0 && (
          <ul aria-labelledby="clients-title" className="rows">
            {list.map((client) => (
              <li key={client.clientId}>
                <p className="row-title">
                  <Link href={mspPath(mspId, "clients", client.clientId)}>{client.clientName}</Link>, created{" "}
                  {day(client.clientCreated)}
                </p>
                <Link
                  href={`/organisations/${encodeURIComponent(client.clientId)}/proxies`}
                  aria-label={`Open the console of ${client.clientName}`}
                >
                  Open its console
                </Link>
              </li>
            ))}
          </ul>
        )}
        <Pager label="clients" pagination={clients.data?.pagination} onPage={setPage} />
      </section>
      <NewClient mspId={mspId} />
      <MspRates mspId={mspId} />
    </>
  );
}

function NewClient({ mspId }: { mspId: string }) {
  const queryClient = useQueryClient();
  const form = useSchemaForm(CREATE);
  const create = useMutation({
    mutationFn: async (clientName: string) =>
      must(await api.POST("/api/msps/{mspId}/clients", { params: { path: { mspId } }, body: { clientName } }))
        .client,
    onSuccess: async (client) => {
      await queryClient.invalidateQueries({ queryKey: mspKeys.clients(mspId) });
      navigate(mspPath(mspId, "clients", client.clientId));
    },
  });
  return (
    <section aria-labelledby="new-client-title">
      <h2 id="new-client-title">New managed client</h2>
      <form
        noValidate
        aria-labelledby="new-client-title"
        className="panel"
        onSubmit={(event) => {
          event.preventDefault();
          const clientName = String(form.value.clientName ?? "").trim();
          if (form.check({ clientName })) create.mutate(clientName);
        }}
      >
        <p className="hint">
          The client starts with no members, billed to the MSP, sharing its credentials, targets and proxies
          with your team. Set its rates, budget, limits and regions on its page.
        </p>
        <SchemaFields
          schema={CREATE}
          value={form.value}
          onChange={form.setValue}
          errors={form.all(create.error)}
        />
        <FormError error={create.error} fields={["clientName"]} />
        <button type="submit" disabled={create.isPending}>
          Create client
        </button>
      </form>
    </section>
  );
}

const RATE_NAMES = {
  apiSeconds: "API seconds",
  storageGB: "Storage (GB)",
  aiTokens: "AI tokens",
  plan: "Plan",
};

/** The MSP's own rates: set by the operator, never through the API. */
function MspRates({ mspId }: { mspId: string }) {
  const configuration = useMspConfiguration(mspId);
  return (
    <section aria-labelledby="msp-rates-title">
      <h2 id="msp-rates-title">The MSP's rates</h2>
      <p>
        The fraction of the retail price the MSP pays (1 is 100%). Your operator sets them; a client's rate is
        never below them.
      </p>
      {configuration.isPending && <p>Loading…</p>}
      {configuration.isError && <p role="alert">Error: {errorText(configuration.error)}</p>}
      {configuration.data && (
        <dl className="details">
          {Object.entries(RATE_NAMES).map(([key, name]) => (
            <div key={key}>
              <dt>{name}</dt>
              <dd>{configuration.data.rates[key as keyof typeof RATE_NAMES]}</dd>
            </div>
          ))}
          <div>
            <dt>Billing</dt>
            <dd>
              {configuration.data.billingType}, {configuration.data.billingStatus}
            </dd>
          </div>
        </dl>
      )}
    </section>
  );
}
