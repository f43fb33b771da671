/**
 * The organisation's targets (spec 2.6, 4.6): the list, a page at a time (newest first, the API's
 * order), and the creation form, built from the API's request schema.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { orgPath } from "../org-frame";
import type { OrgPageProps } from "../org-routes";
import { PAGE_SIZE, Pager } from "../pager";
import { Link, navigate } from "../router";
import { requestSchema, SchemaFields } from "../schema-form";
import { FormError } from "../ui";
import { apiFieldErrors, fieldNames, formatDate, useAbilities, useSchemaForm } from "./credentials-common";

export const targetsKey = (clientId: string) => ["targets", clientId] as const;

/** Labels and hints of the target forms (the fields themselves come from the schema). */
export const TARGET_LABELS = {
  targetName: "Name",
  targetRegion: "Region",
  targetBaseURL: "Base URL",
  targetTestPath: "Health-check path",
  targetDefaultRuleEffect: "Default rule effect",
};
export const TARGET_HINTS = {
  targetRegion:
    "Where the target is registered, for good (for example us-east-1): its proxies are there too.",
  targetBaseURL:
    "The API's address; proxies forward to paths under it (for example https://api.example.com/v1).",
  targetTestPath:
    "Relative to the base URL; the health check and credential tests call it (for example /health).",
  targetDefaultRuleEffect:
    "What happens to a request that none of the target's access rules matches (default allow).",
};

export function TargetsPage({ clientId, user }: OrgPageProps) {
  const can = useAbilities(clientId, user.userId);
  const [page, setPage] = useState(1);
  const list = useQuery({
    queryKey: [...targetsKey(clientId), { page }],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/targets", {
          params: { path: { clientId }, query: { page, limit: PAGE_SIZE } },
        }),
      ),
  });
  const targets = list.data?.targets ?? [];
  return (
    <section aria-labelledby="targets-title">
      <h1 id="targets-title">Targets</h1>
      <p>A target is an API behind your proxies: its base URL, and a health-check path to test it with.</p>
      {can.write && (
        <p>
          <Link href={orgPath(clientId, "targets", "new")}>New target</Link>
        </p>
      )}
      {list.isPending && <p>Loading…</p>}
      {list.isError && <p role="alert">Error: {errorText(list.error)}</p>}
      {list.data && targets.length === 0 && (
        <p>
          No targets yet.{" "}
          {can.write ? (
            <>
              <Link href={orgPath(clientId, "targets", "new")}>Create a target</Link> for the API your proxies
              will forward to.
            </>
          ) : (
            "A member with the DevOps role or above creates them."
          )}
        </p>
      )}
      {targets.length > 0 && (
        <table>
          <caption>Targets, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Base URL</th>
              <th scope="col">Region</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {targets.map((target) => (
              <tr key={target.targetId}>
                <td>
                  <Link href={orgPath(clientId, "targets", target.targetId)}>{target.targetName}</Link>
                </td>
                <td>{target.targetBaseURL}</td>
                <td>{target.targetRegion}</td>
                <td>{formatDate(target.targetCreatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data && <Pager label="targets" pagination={list.data.pagination} onPage={setPage} />}
    </section>
  );
}

const CREATE = "/api/clients/{clientId}/targets";

export function NewTargetPage({ clientId, user }: OrgPageProps) {
  const can = useAbilities(clientId, user.userId);
  const queryClient = useQueryClient();
  const schema = requestSchema("POST", CREATE);
  const form = useSchemaForm(schema);
  const create = useMutation({
    mutationFn: async (body: Record<string, unknown>) =>
      must(await api.POST(CREATE, { params: { path: { clientId } }, body: body as never })).targets[0],
    onSuccess: async (target) => {
      await queryClient.invalidateQueries({ queryKey: targetsKey(clientId) });
      if (target) navigate(orgPath(clientId, "targets", target.targetId));
    },
  });
  const errors = { ...apiFieldErrors(schema, form.value, create.error), ...form.errors };
  if (!can.write)
    return (
      <section aria-labelledby="new-target-title">
        <h1 id="new-target-title">New target</h1>
        <p>Creating targets needs the DevOps role or above in this organisation.</p>
        <p>
          <Link href={orgPath(clientId, "targets")}>Go to the targets</Link>
        </p>
      </section>
    );
  return (
    <section aria-labelledby="new-target-title">
      <h1 id="new-target-title">New target</h1>
      <form
        noValidate
        aria-labelledby="new-target-title"
        className="panel"
        onSubmit={(event) => {
          const body = form.submit(event);
          if (body) create.mutate(body);
        }}
      >
        <SchemaFields
          schema={schema}
          value={form.value}
          onChange={form.setValue}
          errors={errors}
          labels={TARGET_LABELS}
          hints={TARGET_HINTS}
          disabled={create.isPending}
        />
        <FormError error={create.error} fields={fieldNames(schema, form.value)} />
        <div className="button-row">
          <button type="submit" disabled={create.isPending}>
            Create target
          </button>
          <Link href={orgPath(clientId, "targets")}>Cancel</Link>
        </div>
      </form>
    </section>
  );
}
