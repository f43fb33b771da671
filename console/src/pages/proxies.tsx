/**
 * An organisation's proxies (spec 2.7, 4.7): the list, and one proxy's page (its details, edit,
 * activate or deactivate, delete, its rules, filters and path overrides, and links to its meters,
 * transforms and telemetry). A new proxy is made by the wizard (proxies-wizard.tsx).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { orgPath } from "../org-frame";
import type { OrgPageProps } from "../org-routes";
import { PAGE_SIZE, Pager, type Pagination } from "../pager";
import { Link, navigate } from "../router";
import { type FormValue, isEmpty, requestSchema } from "../schema-form";
import { ConfirmDialog, FormError, Status } from "../ui";
import { SchemaForm } from "./proxies-common";
import { RulesSection } from "./rules";

export interface ProxyRecord {
  proxyId: string;
  proxyName: string;
  proxyRegion: string;
  proxyActive: boolean;
  proxyUrl: string | null;
  proxyAlias?: string | null;
  proxyDefaultRuleEffect?: string;
  proxyProxyCredentialId: string;
  proxyTargetId: string;
  proxyTargetCredentialId: string;
  proxyAdditionalHeaders?: Record<string, string>;
  proxyAdditionalQueryParams?: Record<string, string>;
  proxyAdditionalData?: Record<string, unknown>;
  proxyTimeoutSeconds?: number;
  notes?: string;
  proxyUpdatedAt?: string;
}

const proxiesKey = (clientId: string) => ["proxies", clientId] as const;
const proxyKey = (clientId: string, proxyId: string) => ["proxy", clientId, proxyId] as const;

/** The list of proxies, a page at a time, each page by name. */
export function ProxiesPage({ clientId }: OrgPageProps) {
  const [page, setPage] = useState(1);
  const proxies = useQuery({
    queryKey: [...proxiesKey(clientId), page],
    queryFn: async () => {
      const answer = must(
        await api.GET("/api/clients/{clientId}/proxies", {
          params: { path: { clientId }, query: { page, limit: PAGE_SIZE } },
        }),
      );
      return {
        proxies: (answer.proxies as unknown as ProxyRecord[]).toSorted((a, b) =>
          a.proxyName.localeCompare(b.proxyName),
        ),
        pagination: answer.pagination as Pagination,
      };
    },
  });
  const list = proxies.data?.proxies ?? [];
  return (
    <>
      <h1>Proxies</h1>
      <p>
        A proxy forwards your application's calls to a target API: callers present the proxy credential, the
        gateway applies the target credential.
      </p>
      <p>
        <Link href={orgPath(clientId, "proxies", "new")} className="button">
          New proxy
        </Link>
      </p>
      {proxies.isPending && <p>Loading…</p>}
      {proxies.isError && <p role="alert">Error: {errorText(proxies.error)}</p>}
      {proxies.data && list.length === 0 && (
        <p>
          No proxies yet. <Link href={orgPath(clientId, "proxies", "new")}>Create your first proxy</Link>: the
          wizard takes you through its target and credentials.
        </p>
      )}
      {list.length > 0 && (
        <ul aria-label="Proxies" className="rows">
          {list.map((proxy) => (
            <li key={proxy.proxyId}>
              <p className="row-title">
                <Link href={orgPath(clientId, "proxies", proxy.proxyId)}>{proxy.proxyName}</Link>:{" "}
                {proxy.proxyActive ? "Active" : "Inactive"}, {proxy.proxyRegion}
              </p>
              {proxy.proxyUrl && (
                <p className="hint">
                  <code>{proxy.proxyUrl}</code>
                </p>
              )}
            </li>
          ))}
        </ul>
      )}
      <Pager label="proxies" pagination={proxies.data?.pagination} onPage={setPage} />
    </>
  );
}

/** Credentials and targets of the organisation (first 100 of each), for names and link choices. */
function useResources(clientId: string) {
  const credentials = useQuery({
    queryKey: ["credentials", clientId, "all"],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/credentials", {
          params: { path: { clientId }, query: { limit: 100 } },
        }),
      ).credentials as unknown as Array<{
        credentialId: string;
        credentialName: string;
        credentialType: string;
        credentialAuthType: string;
        credentialRegion: string;
      }>,
  });
  const targets = useQuery({
    queryKey: ["targets", clientId, "all"],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/targets", {
          params: { path: { clientId }, query: { limit: 100 } },
        }),
      ).targets as unknown as Array<{
        targetId: string;
        targetName: string;
        targetRegion: string;
        targetBaseURL: string;
      }>,
  });
  return { credentials: credentials.data ?? [], targets: targets.data ?? [] };
}

/** One proxy: details, status, edit, rules, filters, overrides, delete. */
export function ProxyPage({ clientId, params }: OrgPageProps) {
  const proxyId = params.proxyId ?? "";
  const proxy = useQuery({
    queryKey: proxyKey(clientId, proxyId),
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/proxies/{proxyId}", {
          params: { path: { clientId, proxyId } },
        }),
      ).proxies[0] as unknown as ProxyRecord,
  });
  const resources = useResources(clientId);
  if (proxy.isPending) return <p>Loading…</p>;
  if (proxy.isError || !proxy.data)
    return (
      <>
        <h1>Proxy not found</h1>
        {proxy.isError && <p role="alert">Error: {errorText(proxy.error)}</p>}
        <p>
          <Link href={orgPath(clientId, "proxies")}>Go to the proxies</Link>
        </p>
      </>
    );
  const data = proxy.data;
  const credentialName = (id: string) =>
    resources.credentials.find((credential) => credential.credentialId === id)?.credentialName ?? id;
  const target = resources.targets.find((item) => item.targetId === data.proxyTargetId);
  return (
    <>
      <p className="context">
        <Link href={orgPath(clientId, "proxies")}>All proxies</Link>
      </p>
      <h1>{data.proxyName}</h1>
      <nav aria-label="Proxy">
        <ul className="inline">
          <li>
            <Link href={orgPath(clientId, "proxies", proxyId, "meters")}>Meters</Link>
          </li>
          <li>
            <Link href={orgPath(clientId, "proxies", proxyId, "transforms")}>Transforms</Link>
          </li>
          <li>
            <Link href={orgPath(clientId, "proxies", proxyId, "telemetry")}>Telemetry</Link>
          </li>
        </ul>
      </nav>
      <dl className="details">
        <dt>Status</dt>
        <dd>{data.proxyActive ? "Active: serving requests" : "Inactive: refusing every request"}</dd>
        <dt>URL</dt>
        <dd>{data.proxyUrl ? <code>{data.proxyUrl}</code> : "No data-plane address in this region"}</dd>
        <dt>Region</dt>
        <dd>{data.proxyRegion}</dd>
        {data.proxyAlias && (
          <>
            <dt>Alias</dt>
            <dd>{data.proxyAlias}</dd>
          </>
        )}
        <dt>Proxy credential</dt>
        <dd>{credentialName(data.proxyProxyCredentialId)}</dd>
        <dt>Target</dt>
        <dd>{target ? `${target.targetName} (${target.targetBaseURL})` : data.proxyTargetId}</dd>
        <dt>Target credential</dt>
        <dd>{credentialName(data.proxyTargetCredentialId)}</dd>
        <dt>Default rule effect</dt>
        <dd>{data.proxyDefaultRuleEffect ?? "allow"}</dd>
      </dl>
      <Activation clientId={clientId} proxy={data} />
      <EditProxy key={data.proxyUpdatedAt} clientId={clientId} proxy={data} resources={resources} />
      <RulesSection clientId={clientId} owner={{ kind: "proxy", id: proxyId }} />
      <Filters clientId={clientId} proxyId={proxyId} />
      <Overrides clientId={clientId} proxyId={proxyId} />
      <DeleteProxy clientId={clientId} proxy={data} />
    </>
  );
}

function Activation({ clientId, proxy }: { clientId: string; proxy: ProxyRecord }) {
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const titleId = useId();
  const change = useMutation({
    mutationFn: async (proxyActive: boolean) =>
      must(
        await api.PUT("/api/clients/{clientId}/proxies/{proxyId}", {
          params: { path: { clientId, proxyId: proxy.proxyId } },
          body: { proxyActive },
        }),
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: proxyKey(clientId, proxy.proxyId) });
      void queryClient.invalidateQueries({ queryKey: proxiesKey(clientId) });
    },
  });
  return (
    <section aria-labelledby={titleId}>
      <h2 id={titleId}>Status</h2>
      {proxy.proxyActive ? (
        <>
          <p>The proxy is active: it forwards every request its rules allow.</p>
          <button
            type="button"
            className="danger"
            disabled={change.isPending}
            onClick={() => setConfirming(true)}
          >
            Deactivate proxy
          </button>
        </>
      ) : (
        <>
          <p>The proxy is inactive: the data plane refuses every call to it (403, proxy-access-denied).</p>
          <button type="button" disabled={change.isPending} onClick={() => change.mutate(true)}>
            Activate proxy
          </button>
        </>
      )}
      {change.isSuccess && (
        <Status>{change.variables ? "The proxy is active again." : "The proxy is deactivated."}</Status>
      )}
      <FormError error={change.error} />
      <ConfirmDialog
        open={confirming}
        title={`Deactivate ${proxy.proxyName}?`}
        confirmLabel="Deactivate proxy"
        onCancel={() => setConfirming(false)}
        onConfirm={() => {
          change.mutate(false);
          setConfirming(false);
        }}
      >
        <p>
          <strong>Live traffic through it stops immediately</strong>: every caller gets 403
          (proxy-access-denied) until you activate it again. Its settings, rules and meters stay.
        </p>
      </ConfirmDialog>
    </section>
  );
}

const MAPS = ["proxyAdditionalHeaders", "proxyAdditionalQueryParams", "proxyAdditionalData"] as const;

function EditProxy({
  clientId,
  proxy,
  resources,
}: {
  clientId: string;
  proxy: ProxyRecord;
  resources: ReturnType<typeof useResources>;
}) {
  const queryClient = useQueryClient();
  const schema = requestSchema("PUT", "/api/clients/{clientId}/proxies/{proxyId}");
  const before: FormValue = { ...proxy };
  const inRegion = <T extends { credentialRegion?: string; targetRegion?: string }>(items: T[]) =>
    items.filter((item) => (item.credentialRegion ?? item.targetRegion) === proxy.proxyRegion);
  const credentialsOf = (type: string) =>
    inRegion(resources.credentials)
      .filter((credential) => credential.credentialType === type)
      .map((credential) => ({
        value: credential.credentialId,
        label: `${credential.credentialName} (${credential.credentialAuthType})`,
      }));
  return (
    <SchemaForm
      title="Settings"
      schema={schema}
      initial={before}
      before={before}
      fields={[
        "proxyName",
        "proxyAlias",
        "proxyDefaultRuleEffect",
        "proxyTimeoutSeconds",
        "proxyProxyCredentialId",
        "proxyTargetId",
        "proxyTargetCredentialId",
        ...MAPS,
        "notes",
      ]}
      labels={{
        proxyName: "Name",
        proxyAlias: "Alias",
        proxyDefaultRuleEffect: "Default rule effect",
        proxyTimeoutSeconds: "Target timeout (seconds)",
        proxyProxyCredentialId: "Proxy credential",
        proxyTargetId: "Target",
        proxyTargetCredentialId: "Target credential",
        proxyAdditionalHeaders: "Additional headers",
        proxyAdditionalQueryParams: "Additional query parameters",
        proxyAdditionalData: "Additional data",
      }}
      hints={{
        proxyAdditionalHeaders: "Added to every request sent to the target.",
        proxyAdditionalQueryParams: "Added to every request sent to the target.",
        proxyAdditionalData:
          "Merged into the JSON body of POST, PUT and PATCH requests. A value is JSON when it reads as JSON (a number, true, an object), else text.",
        proxyProxyCredentialId: `Only credentials of the proxy's region (${proxy.proxyRegion}) can be linked.`,
      }}
      choices={{
        proxyProxyCredentialId: credentialsOf("proxy"),
        proxyTargetCredentialId: credentialsOf("target"),
        proxyTargetId: inRegion(resources.targets).map((target) => ({
          value: target.targetId,
          label: `${target.targetName} (${target.targetBaseURL})`,
        })),
      }}
      submitLabel="Save settings"
      onSubmit={async (body) => {
        // Only what changed; an emptied map is sent empty (it clears).
        const changed: FormValue = {};
        for (const [name, value] of Object.entries(body))
          if (JSON.stringify(value) !== JSON.stringify(before[name])) changed[name] = value;
        for (const name of MAPS) if (!(name in body) && !isEmpty(before[name])) changed[name] = {};
        if (Object.keys(changed).length === 0) return "unchanged";
        const answer = must(
          await api.PUT("/api/clients/{clientId}/proxies/{proxyId}", {
            params: { path: { clientId, proxyId: proxy.proxyId } },
            body: changed as never,
          }),
        );
        await queryClient.invalidateQueries({ queryKey: proxyKey(clientId, proxy.proxyId) });
        void queryClient.invalidateQueries({ queryKey: proxiesKey(clientId) });
        return answer;
      }}
      success={(result) =>
        result === "unchanged" ? "Nothing to save: no field changed." : "Settings saved."
      }
    />
  );
}

interface Filters {
  ipAllow: string[];
  ipDeny: string[];
  requiredHeaders: string[];
  stripHeaders: string[];
  removeResponseFields: string[];
  updatedAt: string | null;
}

const FILTER_LABELS: Record<keyof Omit<Filters, "updatedAt">, string> = {
  ipAllow: "Allowed IP ranges",
  ipDeny: "Denied IP ranges",
  requiredHeaders: "Required headers",
  stripHeaders: "Stripped headers",
  removeResponseFields: "Fields removed from responses",
};

function Filters({ clientId, proxyId }: { clientId: string; proxyId: string }) {
  const queryClient = useQueryClient();
  const titleId = useId();
  const [editing, setEditing] = useState(false);
  const [clearing, setClearing] = useState(false);
  const key = ["filters", clientId, proxyId] as const;
  const path = { clientId, proxyId };
  const filters = useQuery({
    queryKey: key,
    queryFn: async () =>
      must(await api.GET("/api/clients/{clientId}/proxies/{proxyId}/filters", { params: { path } }))
        .filters[0] as unknown as Filters,
  });
  const clear = useMutation({
    mutationFn: async () =>
      must(await api.DELETE("/api/clients/{clientId}/proxies/{proxyId}/filters", { params: { path } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: key }),
  });
  const schema = requestSchema("PUT", "/api/clients/{clientId}/proxies/{proxyId}/filters");
  const data = filters.data;
  const names = Object.keys(FILTER_LABELS) as Array<keyof typeof FILTER_LABELS>;
  const set = data ? names.filter((name) => data[name].length > 0) : [];
  return (
    <section aria-labelledby={titleId}>
      <h2 id={titleId}>Filters</h2>
      <p>
        Checked on every request before it is forwarded: IP allow and deny lists (deny wins), headers a
        request must carry or that are removed, and fields removed from JSON answers. A change applies from
        the next request.
      </p>
      {filters.isPending && <p>Loading…</p>}
      {filters.isError && <p role="alert">Error: {errorText(filters.error)}</p>}
      {clear.isSuccess && <Status>Every filter was removed.</Status>}
      <FormError error={clear.error} />
      {data && set.length === 0 && !editing && (
        <p>
          No filters: every caller and header passes.{" "}
          <button type="button" className="link" onClick={() => setEditing(true)}>
            Add a filter
          </button>
        </p>
      )}
      {data && set.length > 0 && (
        <dl aria-label="Filters of the proxy" className="details">
          {set.map((name) => (
            <div key={name}>
              <dt>{FILTER_LABELS[name]}</dt>
              <dd>{data[name].join(", ")}</dd>
            </div>
          ))}
        </dl>
      )}
      {data && (set.length > 0 || editing) && (
        <div className="button-row">
          {!editing && (
            <button type="button" onClick={() => setEditing(true)}>
              Edit filters
            </button>
          )}
          {set.length > 0 && (
            <button type="button" className="secondary" onClick={() => setClearing(true)}>
              Remove all filters
            </button>
          )}
        </div>
      )}
      {data && editing && (
        <SchemaForm
          key={data.updatedAt ?? "none"}
          title="Edit filters"
          headingLevel={3}
          schema={schema}
          initial={{ ...data }}
          before={{ ...data }}
          labels={FILTER_LABELS}
          hints={{
            ipAllow: "CIDR ranges or addresses, one per line; when any is set, only callers inside one pass.",
            ipDeny: "CIDR ranges or addresses, one per line; a denied caller gets 403.",
            requiredHeaders: "Header names, one per line; a request without one gets 400.",
            stripHeaders: "Header names, one per line, removed before forwarding.",
            removeResponseFields: "Dot paths (* for every element), one per line.",
          }}
          submitLabel="Save filters"
          onSubmit={async (body) => {
            const answer = must(
              await api.PUT("/api/clients/{clientId}/proxies/{proxyId}/filters", {
                params: { path },
                body: body as never,
              }),
            );
            queryClient.setQueryData(key, answer.filters[0]);
            setEditing(false);
            return answer;
          }}
        />
      )}
      <ConfirmDialog
        open={clearing}
        title="Remove every filter of this proxy?"
        confirmLabel="Remove all filters"
        onCancel={() => setClearing(false)}
        onConfirm={() => {
          clear.mutate();
          setClearing(false);
        }}
      >
        <p>
          Its IP allow and deny lists, required and stripped headers and removed response fields all go: from
          the next request, every caller and header passes and answers are returned whole.
        </p>
      </ConfirmDialog>
    </section>
  );
}

interface PathOverride {
  pathPrefix: string;
  timeoutSeconds?: number;
  additionalHeaders?: Record<string, string>;
}

function Overrides({ clientId, proxyId }: { clientId: string; proxyId: string }) {
  const queryClient = useQueryClient();
  const titleId = useId();
  const [editing, setEditing] = useState(false);
  const [clearing, setClearing] = useState(false);
  const key = ["overrides", clientId, proxyId] as const;
  const path = { clientId, proxyId };
  const overrides = useQuery({
    queryKey: key,
    queryFn: async () =>
      must(await api.GET("/api/clients/{clientId}/proxies/{proxyId}/overrides", { params: { path } }))
        .overrides[0] as unknown as { pathOverrides: PathOverride[]; updatedAt: string | null },
  });
  const clear = useMutation({
    mutationFn: async () =>
      must(await api.DELETE("/api/clients/{clientId}/proxies/{proxyId}/overrides", { params: { path } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: key }),
  });
  const schema = requestSchema("PUT", "/api/clients/{clientId}/proxies/{proxyId}/overrides");
  const list = (overrides.data?.pathOverrides ?? []).toSorted((a, b) =>
    a.pathPrefix.localeCompare(b.pathPrefix),
  );
  return (
    <section aria-labelledby={titleId}>
      <h2 id={titleId}>Path overrides</h2>
      <p>
        Per path prefix (after the proxy's URL): a target timeout replacing the proxy's, and headers added
        over the proxy's additional headers. The longest prefix covering a request's path applies.
      </p>
      {overrides.isPending && <p>Loading…</p>}
      {overrides.isError && <p role="alert">Error: {errorText(overrides.error)}</p>}
      {clear.isSuccess && <Status>Every path override was removed.</Status>}
      <FormError error={clear.error} />
      {overrides.data && list.length === 0 && !editing && (
        <p>
          No path overrides: the proxy's own timeout and headers apply to every path.{" "}
          <button type="button" className="link" onClick={() => setEditing(true)}>
            Add a path override
          </button>
        </p>
      )}
      {list.length > 0 && (
        <ul aria-label="Path overrides of the proxy" className="rows">
          {list.map((override) => (
            <li key={override.pathPrefix}>
              <code>{override.pathPrefix}</code>
              {override.timeoutSeconds !== undefined && `: timeout ${override.timeoutSeconds} s`}
              {override.additionalHeaders &&
                Object.keys(override.additionalHeaders).length > 0 &&
                `; headers ${Object.entries(override.additionalHeaders)
                  .map(([name, value]) => `${name}: ${value}`)
                  .join(", ")}`}
            </li>
          ))}
        </ul>
      )}
      {overrides.data && (list.length > 0 || editing) && (
        <div className="button-row">
          {!editing && (
            <button type="button" onClick={() => setEditing(true)}>
              Edit path overrides
            </button>
          )}
          {list.length > 0 && (
            <button type="button" className="secondary" onClick={() => setClearing(true)}>
              Remove all path overrides
            </button>
          )}
        </div>
      )}
      {overrides.data && editing && (
        <SchemaForm
          key={overrides.data.updatedAt ?? "none"}
          title="Edit path overrides"
          headingLevel={3}
          schema={schema}
          initial={{ pathOverrides: list.length ? list : [{}] }}
          before={{ pathOverrides: list }}
          labels={{ pathOverrides: "Path override" }}
          hints={{ pathOverrides: "Each: a prefix starting with /, and a timeout (1-60 s) or headers." }}
          submitLabel="Save path overrides"
          onSubmit={async (body) => {
            const answer = must(
              await api.PUT("/api/clients/{clientId}/proxies/{proxyId}/overrides", {
                params: { path },
                body: (body.pathOverrides ? body : { pathOverrides: null }) as never,
              }),
            );
            queryClient.setQueryData(key, answer.overrides[0]);
            setEditing(false);
            return answer;
          }}
        />
      )}
      <ConfirmDialog
        open={clearing}
        title="Remove every path override of this proxy?"
        confirmLabel="Remove all path overrides"
        onCancel={() => setClearing(false)}
        onConfirm={() => {
          clear.mutate();
          setClearing(false);
        }}
      >
        <p>
          Every prefix's timeout and headers go: from the next request, the proxy's own timeout and additional
          headers apply to every path.
        </p>
      </ConfirmDialog>
    </section>
  );
}

function DeleteProxy({ clientId, proxy }: { clientId: string; proxy: ProxyRecord }) {
  const queryClient = useQueryClient();
  const titleId = useId();
  const [confirming, setConfirming] = useState(false);
  const remove = useMutation({
    mutationFn: async () =>
      must(
        await api.DELETE("/api/clients/{clientId}/proxies/{proxyId}", {
          params: { path: { clientId, proxyId: proxy.proxyId } },
        }),
      ),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: proxyKey(clientId, proxy.proxyId) });
      await queryClient.invalidateQueries({ queryKey: proxiesKey(clientId) });
      navigate(orgPath(clientId, "proxies"));
    },
  });
  return (
    <section aria-labelledby={titleId}>
      <h2 id={titleId}>Delete proxy</h2>
      <button
        type="button"
        className="danger"
        disabled={remove.isPending}
        onClick={() => setConfirming(true)}
      >
        Delete proxy
      </button>
      <FormError error={remove.error} />
      <ConfirmDialog
        open={confirming}
        title={`Delete ${proxy.proxyName}?`}
        confirmLabel="Delete proxy"
        onCancel={() => setConfirming(false)}
        onConfirm={() => {
          remove.mutate();
          setConfirming(false);
        }}
      >
        <p>
          Its URL stops answering at once. Its rules, meters (with their counters), transforms, filters and
          path overrides go with it. Its credentials and target stay, for other proxies.
        </p>
      </ConfirmDialog>
    </section>
  );
}
