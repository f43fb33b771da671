/**
 * One target (spec 2.6, 4.6): its details, the health check (a live request to its health-check
 * path, with one of the organisation's target credentials of its region applied, through the
 * credential test), its access rules, the edit form (from the API's schema) and its deletion,
 * whose dialog names the proxies that go with it (spec 1.10).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { orgPath } from "../org-frame";
import type { OrgPageProps } from "../org-routes";
import { Link, navigate } from "../router";
import { requestSchema, SchemaFields } from "../schema-form";
import { FormError, Status } from "../ui";
import { authTypeName } from "./credentials";
import { apiFieldErrors, fieldNames, formatDate, useAbilities, useSchemaForm } from "./credentials-common";
import { TESTABLE } from "./credentials-detail";
import { DeleteWithProxies } from "./delete-with-proxies";
import { RulesSection } from "./rules";
import { TARGET_HINTS, TARGET_LABELS, targetsKey } from "./targets";

const ONE = "/api/clients/{clientId}/targets/{targetId}";

const targetKey = (clientId: string, targetId: string) => [...targetsKey(clientId), "one", targetId] as const;

export function TargetPage({ clientId, params, user }: OrgPageProps) {
  const targetId = params.targetId ?? "";
  const can = useAbilities(clientId, user.userId);
  const target = useQuery({
    queryKey: targetKey(clientId, targetId),
    queryFn: async () => must(await api.GET(ONE, { params: { path: { clientId, targetId } } })).targets[0],
  });
  if (target.isPending) return <p>Loading…</p>;
  if (target.isError || !target.data)
    return (
      <section aria-labelledby="target-title">
        <h1 id="target-title">Target not found</h1>
        {target.isError && <p role="alert">Error: {errorText(target.error)}</p>}
        <p>
          <Link href={orgPath(clientId, "targets")}>Go to the targets</Link>
        </p>
      </section>
    );
  const data = target.data;
  return (
    <>
      <h1 id="target-title">{data.targetName}</h1>
      <p className="context">
        <Link href={orgPath(clientId, "targets")}>All targets</Link>
      </p>
      <section aria-labelledby="details-title">
        <h2 id="details-title">Details</h2>
        <dl className="details">
          <dt>Base URL</dt>
          <dd>{data.targetBaseURL}</dd>
          <dt>Health-check path</dt>
          <dd>{data.targetTestPath}</dd>
          <dt>Region</dt>
          <dd>{data.targetRegion}</dd>
          <dt>Default rule effect</dt>
          <dd>{data.targetDefaultRuleEffect}</dd>
          <dt>Notes</dt>
          <dd>{data.notes || "—"}</dd>
          <dt>Created</dt>
          <dd>{formatDate(data.targetCreatedAt)}</dd>
          <dt>Updated</dt>
          <dd>{formatDate(data.targetUpdatedAt)}</dd>
          <dt>Id</dt>
          <dd>
            <code>{data.targetId}</code>
          </dd>
        </dl>
      </section>
      {can.test && (
        <HealthCheck
          clientId={clientId}
          targetId={targetId}
          region={data.targetRegion}
          url={`${data.targetBaseURL.replace(/\/$/, "")}/${data.targetTestPath.replace(/^\//, "")}`}
        />
      )}
      <RulesSection clientId={clientId} owner={{ kind: "target", id: targetId }} />
      {can.write && (
        <>
          <EditTarget
            clientId={clientId}
            targetId={targetId}
            initial={{
              targetName: data.targetName,
              targetBaseURL: data.targetBaseURL,
              targetTestPath: data.targetTestPath,
              targetDefaultRuleEffect: data.targetDefaultRuleEffect,
              notes: data.notes ?? "",
            }}
          />
          <DeleteTarget clientId={clientId} targetId={targetId} name={data.targetName} />
        </>
      )}
    </>
  );
}

function HealthCheck({
  clientId,
  targetId,
  region,
  url,
}: {
  clientId: string;
  targetId: string;
  region: string;
  url: string;
}) {
  const selectId = useId();
  const credentials = useQuery({
    queryKey: ["credentials", clientId, "target-credentials"],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/credentials", {
          params: { path: { clientId }, query: { limit: 100 } },
        }),
      ).credentials,
  });
  const usable = (credentials.data ?? []).filter(
    (credential) =>
      credential.credentialType === "target" &&
      credential.credentialRegion === region &&
      TESTABLE.includes(credential.credentialAuthType),
  );
  const [chosen, setChosen] = useState("");
  const credentialId = chosen || usable[0]?.credentialId || "";
  const check = useMutation({
    mutationFn: async () =>
      must(
        await api.POST("/api/clients/{clientId}/credentials/{credentialId}/test", {
          params: { path: { clientId, credentialId } },
          body: { targetId, method: "GET", timeoutSeconds: 10 },
        }),
      ).tests[0],
  });
  const result = check.data;
  const healthy = result !== undefined && result.status >= 200 && result.status < 400;
  return (
    <section aria-labelledby="health-title">
      <h2 id="health-title">Health check</h2>
      <p>
        Sends <code>GET {url}</code> with a target credential of {region} applied, and shows what the target
        answered.
      </p>
      {credentials.isPending && <p>Loading…</p>}
      {credentials.isError && <p role="alert">Error: {errorText(credentials.error)}</p>}
      {credentials.data && usable.length === 0 && (
        <p>
          No target credential in {region} to check with.{" "}
          <Link href={orgPath(clientId, "credentials", "new")}>Create a target credential</Link> (auth type
          “none” for a health path without authentication).
        </p>
      )}
      {usable.length > 0 && (
        <form
          aria-labelledby="health-title"
          className="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
            check.mutate();
          }}
        >
          <label htmlFor={selectId}>Credential to check with</label>
          <select id={selectId} value={credentialId} onChange={(event) => setChosen(event.target.value)}>
            {usable.map((credential) => (
              <option key={credential.credentialId} value={credential.credentialId}>
                {credential.credentialName} ({authTypeName(credential.credentialAuthType)})
              </option>
            ))}
          </select>
          <button type="submit" disabled={check.isPending}>
            {check.isPending ? "Checking…" : "Check health"}
          </button>
        </form>
      )}
      <FormError error={check.error} />
      {result && (
        <Status>
          {healthy ? "Healthy" : "Not healthy"}: the target answered {result.status} in{" "}
          {Math.round(result.durationMs)} ms.
        </Status>
      )}
    </section>
  );
}

function EditTarget({
  clientId,
  targetId,
  initial,
}: {
  clientId: string;
  targetId: string;
  initial: Record<string, unknown>;
}) {
  const queryClient = useQueryClient();
  const schema = requestSchema("PUT", ONE);
  const form = useSchemaForm(schema, initial);
  const save = useMutation({
    mutationFn: async (body: Record<string, unknown>) =>
      must(await api.PUT(ONE, { params: { path: { clientId, targetId } }, body: body as never })).targets[0],
    onSuccess: async (target) => {
      await queryClient.invalidateQueries({ queryKey: targetsKey(clientId) });
      if (target) queryClient.setQueryData(targetKey(clientId, targetId), target);
    },
  });
  const errors = { ...apiFieldErrors(schema, form.value, save.error), ...form.errors };
  return (
    <section aria-labelledby="edit-title">
      <h2 id="edit-title">Edit</h2>
      <p>The region never changes. Proxies using the target see a change on their next request.</p>
      <form
        noValidate
        aria-labelledby="edit-title"
        onSubmit={(event) => {
          const body = form.submit(event);
          if (body) save.mutate(body);
        }}
      >
        <SchemaFields
          schema={schema}
          value={form.value}
          onChange={form.setValue}
          errors={errors}
          labels={TARGET_LABELS}
          hints={TARGET_HINTS}
          disabled={save.isPending}
        />
        <FormError error={save.error} fields={fieldNames(schema, form.value)} />
        {save.isSuccess && <Status>Target saved.</Status>}
        <button type="submit" disabled={save.isPending}>
          Save
        </button>
      </form>
    </section>
  );
}

function DeleteTarget({ clientId, targetId, name }: { clientId: string; targetId: string; name: string }) {
  const queryClient = useQueryClient();
  return (
    <DeleteWithProxies
      clientId={clientId}
      kind="target"
      name={name}
      intro="Deleting it also deletes its access rules and every proxy that forwards to it."
      consequence="Its access rules are deleted too; this cannot be undone."
      uses={(proxy) => proxy.proxyTargetId === targetId}
      verb={{ one: "forwards to", many: "forward to" }}
      remove={async () => must(await api.DELETE(ONE, { params: { path: { clientId, targetId } } }))}
      onDeleted={async () => {
        queryClient.removeQueries({ queryKey: targetKey(clientId, targetId) });
        await queryClient.invalidateQueries({ queryKey: targetsKey(clientId) });
        navigate(orgPath(clientId, "targets"));
      }}
    />
  );
}
