/**
 * The organisation's credentials (spec 2.5, 4.5): the list, a page at a time (newest first, the
 * API's order), with the temporary OAuth2 credentials that still wait for their authorization
 * behind "Show pending authorizations"; and the creation form, built from the API's request schema
 * (its fields, choices and limits come from the OpenAPI document; the secret's shape follows the
 * chosen auth type as the schema describes it). The secret is entered once and never shown again.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { orgPath } from "../org-frame";
import type { OrgPageProps } from "../org-routes";
import { PAGE_SIZE, Pager } from "../pager";
import { Link, navigate } from "../router";
import { requestSchema, SchemaFields } from "../schema-form";
import { FormError } from "../ui";
import {
  apiFieldErrors,
  fieldNames,
  formatDate,
  proxiesKey,
  useAbilities,
  useSchemaForm,
} from "./credentials-common";

export const credentialsKey = (clientId: string) => ["credentials", clientId] as const;
/** The provider's URL of a just-created OAuth2 credential (only the creation's answer carries it). */
export const authorizationUrlKey = (clientId: string, credentialId: string) =>
  // Outside credentialsKey: invalidating the credentials must not forget it.
  ["oauth2AuthorizationUrl", clientId, credentialId] as const;

/** The auth types of each credential type (spec 2.5), for the list's words. */
export const AUTH_TYPE_NAMES: Record<string, string> = {
  apiKey: "API key",
  bearer: "Bearer token",
  jwt: "JWT",
  basicAuth: "Basic auth",
  oauth2: "OAuth2",
  customToken: "Custom token",
  custom: "Custom",
  none: "No authentication",
  jwtVerify: "JWT verification",
};
export const authTypeName = (authType: string) => AUTH_TYPE_NAMES[authType] ?? authType;
export const credentialTypeName = (type: string) =>
  type === "proxy" ? "Proxy credential (callers)" : "Target credential (to the target)";

export function CredentialsPage({ clientId, user }: OrgPageProps) {
  const can = useAbilities(clientId, user.userId);
  const [page, setPage] = useState(1);
  const [pending, setPending] = useState(false);
  const pendingId = useId();
  const list = useQuery({
    queryKey: [...credentialsKey(clientId), { page, pending }],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/credentials", {
          params: {
            path: { clientId },
            query: { page, limit: PAGE_SIZE, ...(pending ? { includeTemporary: true } : {}) },
          },
        }),
      ),
  });
  const credentials = list.data?.credentials ?? [];
  return (
    <section aria-labelledby="credentials-title">
      <h1 id="credentials-title">Credentials</h1>
      <p>
        A <strong>proxy credential</strong> is how your applications authenticate to a proxy; a{" "}
        <strong>target credential</strong> is how the gateway authenticates to the target API. Secrets are
        stored encrypted and never shown again.
      </p>
      {can.write && (
        <p>
          <Link href={orgPath(clientId, "credentials", "new")}>New credential</Link>
        </p>
      )}
      <div className="check">
        <input
          id={pendingId}
          type="checkbox"
          checked={pending}
          onChange={(event) => {
            setPending(event.target.checked);
            setPage(1);
          }}
        />
        <label htmlFor={pendingId}>Show pending authorizations</label>
      </div>
      {list.isPending && <p>Loading…</p>}
      {list.isError && <p role="alert">Error: {errorText(list.error)}</p>}
      {list.data && credentials.length === 0 && (
        <p>
          No credentials yet.{" "}
          {can.write ? (
            <>
              <Link href={orgPath(clientId, "credentials", "new")}>Create a credential</Link>: a proxy
              credential for your callers and a target credential for the API behind the proxy.
            </>
          ) : (
            "A member with the DevOps role or above creates them."
          )}
        </p>
      )}
      {credentials.length > 0 && (
        <table>
          <caption>Credentials, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Authentication</th>
              <th scope="col">Region</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {credentials.map((credential) => (
              <tr key={credential.credentialId}>
                <td>
                  <Link href={orgPath(clientId, "credentials", credential.credentialId)}>
                    {credential.credentialName}
                  </Link>
                  {credential.credentialTemporary && " (waiting for authorization)"}
                </td>
                <td>{credential.credentialType === "proxy" ? "Proxy" : "Target"}</td>
                <td>{authTypeName(credential.credentialAuthType)}</td>
                <td>{credential.credentialRegion}</td>
                <td>{formatDate(credential.credentialCreatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data && <Pager label="credentials" pagination={list.data.pagination} onPage={setPage} />}
    </section>
  );
}

const CREATE = "/api/clients/{clientId}/credentials";

export function NewCredentialPage({ clientId, user }: OrgPageProps) {
  const can = useAbilities(clientId, user.userId);
  const queryClient = useQueryClient();
  const schema = requestSchema("POST", CREATE);
  const form = useSchemaForm(schema, { credentialType: "target" });
  const create = useMutation({
    mutationFn: async (body: Record<string, unknown>) =>
      must(
        await api.POST(CREATE, {
          params: { path: { clientId } },
          // The body is the schema's: SchemaFields built it and validate() checked it.
          body: body as never,
        }),
      ).credentials[0],
    onSuccess: async (credential) => {
      if (!credential) return;
      // The value typed is dropped at once: the secret lives on only in the vault.
      form.reset({});
      if (credential.authorizationUrl)
        queryClient.setQueryData(
          authorizationUrlKey(clientId, credential.credentialId),
          credential.authorizationUrl,
        );
      await queryClient.invalidateQueries({ queryKey: credentialsKey(clientId) });
      await queryClient.invalidateQueries({ queryKey: proxiesKey(clientId) });
      navigate(orgPath(clientId, "credentials", credential.credentialId));
    },
  });
  const errors = { ...apiFieldErrors(schema, form.value, create.error), ...form.errors };
  if (!can.write)
    return (
      <section aria-labelledby="new-credential-title">
        <h1 id="new-credential-title">New credential</h1>
        <p>Creating credentials needs the DevOps role or above in this organisation.</p>
        <p>
          <Link href={orgPath(clientId, "credentials")}>Go to the credentials</Link>
        </p>
      </section>
    );
  return (
    <section aria-labelledby="new-credential-title">
      <h1 id="new-credential-title">New credential</h1>
      <p className="notice">
        The secret is entered once: it is encrypted in the region you choose and never shown again, here or in
        the API. Only the name, the notes and the default rule effect can change later.
      </p>
      <form
        noValidate
        aria-labelledby="new-credential-title"
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
          labels={{ credentialName: "Name", region: "Region", authType: "Auth type" }}
          hints={{
            credentialType:
              "proxy: how callers authenticate to a proxy; target: how the gateway authenticates to the target API.",
            region:
              "Where the credential is stored, for good (for example us-east-1): its proxies are there too.",
            singleUse: "Deleted, with the proxies using it, after its first successful use.",
            secret: "Entered once, never shown again.",
          }}
          disabled={create.isPending}
        />
        <FormError error={create.error} fields={fieldNames(schema, form.value)} />
        <div className="button-row">
          <button type="submit" disabled={create.isPending}>
            Create credential
          </button>
          <Link href={orgPath(clientId, "credentials")}>Cancel</Link>
        </div>
      </form>
    </section>
  );
}
