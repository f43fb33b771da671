/**
 * One credential (spec 2.5, 4.5): its metadata (never a secret), its OAuth2 authorization (the
 * provider's consent starts here and lands back here, `?oauth2=authorized|denied|failed`), the
 * credential test ("Send a test request") and the token test, its access rules, the metadata form,
 * and its deletion, whose dialog names the proxies that go with it (spec 1.10).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { orgPath } from "../org-frame";
import type { OrgPageProps } from "../org-routes";
import { Link, navigate, useLocation } from "../router";
import { requestSchema, SchemaFields } from "../schema-form";
import { FormError, Status } from "../ui";
import { authorizationUrlKey, authTypeName, credentialsKey, credentialTypeName } from "./credentials";
import { apiFieldErrors, fieldNames, formatDate, useAbilities, useSchemaForm } from "./credentials-common";
import { DeleteWithProxies } from "./delete-with-proxies";
import { RulesSection } from "./rules";

const ONE = "/api/clients/{clientId}/credentials/{credentialId}";
/** The auth types the live credential test applies (spec 4.5). */
export const TESTABLE = ["apiKey", "bearer", "jwt", "basicAuth", "custom", "none"];
/** The auth types whose token the token test fetches (customToken; oauth2 client_credentials). */
const TOKEN_TESTABLE = ["customToken", "oauth2"];

const OAUTH2_OUTCOMES: Record<string, { text: string; warning: boolean }> = {
  authorized: { text: "The provider authorized this credential: it is ready to use.", warning: false },
  denied: {
    text: "The authorization was refused at the provider: the credential still waits for it. Delete it and create it again to retry.",
    warning: true,
  },
  failed: {
    text: "The provider's answer could not be used (the code exchange was refused, or the credential no longer waited): the credential is not authorized.",
    warning: true,
  },
};

export const credentialKey = (clientId: string, credentialId: string) =>
  [...credentialsKey(clientId), "one", credentialId] as const;

export function CredentialPage({ clientId, params, user }: OrgPageProps) {
  const credentialId = params.credentialId ?? "";
  const can = useAbilities(clientId, user.userId);
  const { search } = useLocation();
  const credential = useQuery({
    queryKey: credentialKey(clientId, credentialId),
    queryFn: async () =>
      must(await api.GET(ONE, { params: { path: { clientId, credentialId } } })).credentials[0],
  });
  if (credential.isPending) return <p>Loading…</p>;
  if (credential.isError || !credential.data)
    return (
      <section aria-labelledby="credential-title">
        <h1 id="credential-title">Credential not found</h1>
        {credential.isError && <p role="alert">Error: {errorText(credential.error)}</p>}
        <p>
          <Link href={orgPath(clientId, "credentials")}>Go to the credentials</Link>
        </p>
      </section>
    );
  const data = credential.data;
  const outcome = OAUTH2_OUTCOMES[search.get("oauth2") ?? ""];
  return (
    <>
      <h1 id="credential-title">{data.credentialName}</h1>
      <p className="context">
        <Link href={orgPath(clientId, "credentials")}>All credentials</Link>
      </p>
      {outcome &&
        (outcome.warning ? (
          <p role="alert" className="notice warning">
            Authorization not completed. {outcome.text}
          </p>
        ) : (
          <div className="notice">
            <Status>Authorization complete. {outcome.text}</Status>
          </div>
        ))}
      <section aria-labelledby="details-title">
        <h2 id="details-title">Details</h2>
        <dl className="details">
          <dt>Type</dt>
          <dd>{credentialTypeName(data.credentialType)}</dd>
          <dt>Authentication</dt>
          <dd>{authTypeName(data.credentialAuthType)}</dd>
          <dt>Region</dt>
          <dd>{data.credentialRegion}</dd>
          <dt>Default rule effect</dt>
          <dd>{data.credentialDefaultRuleEffect}</dd>
          <dt>Single use</dt>
          <dd>{data.singleUse ? "Yes: deleted after its first successful use" : "No"}</dd>
          {data.credentialSecretHeaders && data.credentialSecretHeaders.length > 0 && (
            <>
              <dt>Secret headers</dt>
              <dd>{data.credentialSecretHeaders.join(", ")} (values redacted in request logs)</dd>
            </>
          )}
          <dt>Secret</dt>
          <dd>Stored encrypted; never shown.</dd>
          <dt>Notes</dt>
          <dd>{data.notes || "—"}</dd>
          <dt>Created</dt>
          <dd>{formatDate(data.credentialCreatedAt)}</dd>
          <dt>Updated</dt>
          <dd>{formatDate(data.credentialUpdatedAt)}</dd>
          <dt>Id</dt>
          <dd>
            <code>{data.credentialId}</code>
          </dd>
        </dl>
      </section>
      {data.credentialAuthType === "oauth2" && (
        <Authorization
          clientId={clientId}
          credentialId={credentialId}
          temporary={data.credentialTemporary}
          authorizedAt={data.oauthAuthorizedAt}
          refreshedAt={data.oauthRefreshedAt}
        />
      )}
      {can.test && TESTABLE.includes(data.credentialAuthType) && (
        <TestRequest clientId={clientId} credentialId={credentialId} region={data.credentialRegion} />
      )}
      {/* The token test fetches customToken tokens and oauth2 client_credentials ones (never authorized by a person). */}
      {can.test &&
        TOKEN_TESTABLE.includes(data.credentialAuthType) &&
        !data.credentialTemporary &&
        !data.oauthAuthorizedAt && (
          <TokenTest clientId={clientId} credentialId={credentialId} authType={data.credentialAuthType} />
        )}
      <RulesSection clientId={clientId} owner={{ kind: "credential", id: credentialId }} />
      {can.write && (
        <>
          <EditCredential
            clientId={clientId}
            credentialId={credentialId}
            initial={{
              credentialName: data.credentialName,
              notes: data.notes ?? "",
              credentialDefaultRuleEffect: data.credentialDefaultRuleEffect,
            }}
          />
          <DeleteCredential clientId={clientId} credentialId={credentialId} name={data.credentialName} />
        </>
      )}
    </>
  );
}

function Authorization({
  clientId,
  credentialId,
  temporary,
  authorizedAt,
  refreshedAt,
}: {
  clientId: string;
  credentialId: string;
  temporary: boolean;
  authorizedAt?: string;
  refreshedAt?: string;
}) {
  // Only the creation's answer carries the provider's URL: it is kept for this visit of the console.
  const url = useQuery({
    queryKey: authorizationUrlKey(clientId, credentialId),
    queryFn: () => null as string | null,
    staleTime: Number.POSITIVE_INFINITY,
    gcTime: Number.POSITIVE_INFINITY,
  }).data;
  return (
    <section aria-labelledby="authorization-title">
      <h2 id="authorization-title">OAuth2 authorization</h2>
      {temporary ? (
        <>
          <p>
            <strong>Status: waiting for authorization.</strong> The credential cannot be used until someone
            with an account at the provider consents; it is deleted after an hour without consent.
          </p>
          {url ? (
            <p>
              <a href={url}>Authorize at the provider</a> (you come back to this page afterwards).
            </p>
          ) : (
            <p>
              The provider's link is shown only right after the creation. To authorize now, delete this
              credential and create it again.
            </p>
          )}
        </>
      ) : authorizedAt ? (
        <p>
          <strong>Status: authorized</strong> on {formatDate(authorizedAt)}
          {refreshedAt ? `; access token last refreshed on ${formatDate(refreshedAt)}` : ""}.
        </p>
      ) : (
        <p>
          <strong>Status: ready</strong> (client credentials: the gateway fetches its tokens itself).
        </p>
      )}
    </section>
  );
}

const TEST = "/api/clients/{clientId}/credentials/{credentialId}/test";

function TestRequest({
  clientId,
  credentialId,
  region,
}: {
  clientId: string;
  credentialId: string;
  region: string;
}) {
  const schema = requestSchema("POST", TEST);
  const form = useSchemaForm(schema, { method: "GET" });
  const targets = useQuery({
    queryKey: ["targets", clientId, "all"],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/targets", {
          params: { path: { clientId }, query: { limit: 100 } },
        }),
      ).targets,
  });
  const test = useMutation({
    mutationFn: async (body: Record<string, unknown>) =>
      must(await api.POST(TEST, { params: { path: { clientId, credentialId } }, body: body as never }))
        .tests[0],
  });
  const choices = (targets.data ?? [])
    .filter((target) => target.targetRegion === region)
    .map((target) => ({
      value: target.targetId,
      label: `${target.targetName} (${target.targetBaseURL}${target.targetTestPath})`,
    }));
  const errors = { ...apiFieldErrors(schema, form.value, test.error), ...form.errors };
  const result = test.data;
  return (
    <section aria-labelledby="test-title">
      <h2 id="test-title">Send a test request</h2>
      <p>
        Sends one live request with this credential applied, to one of your targets in {region} (its
        health-check path unless you give a path) or to a full URL. Secret values in the answer are shown as
        [redacted].
      </p>
      <form
        noValidate
        aria-labelledby="test-title"
        className="panel"
        onSubmit={(event) => {
          const body = form.submit(event);
          if (body) test.mutate(body);
        }}
      >
        <SchemaFields
          schema={schema}
          value={form.value}
          onChange={form.setValue}
          errors={errors}
          fields={["method", "targetId", "path", "url", "headers", "query", "body", "timeoutSeconds"]}
          labels={{ targetId: "Target", url: "Full URL", path: "Path", timeoutSeconds: "Timeout (seconds)" }}
          hints={{
            targetId: "A target, or a full URL below: one of the two.",
            path: "Relative to the target's base URL; default: its health-check path.",
            url: "Instead of a target (needs the DevOps role).",
            headers: "Extra headers; they never replace the credential's.",
            body: "Sent with POST only.",
          }}
          choices={{ targetId: choices }}
          disabled={test.isPending}
        />
        <FormError error={test.error} fields={fieldNames(schema, form.value)} />
        <button type="submit" disabled={test.isPending}>
          {test.isPending ? "Sending…" : "Send test request"}
        </button>
      </form>
      {result && (
        <section aria-labelledby="test-result-title" className="panel">
          <h3 id="test-result-title">Test result</h3>
          <Status>
            {result.request.method} {result.request.url} answered {result.status} in{" "}
            {Math.round(result.durationMs)} ms.
          </Status>
          <table>
            <caption>Response headers</caption>
            <thead>
              <tr>
                <th scope="col">Header</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            <tbody>
              {Object.entries(result.headers).map(([name, value]) => (
                <tr key={name}>
                  <td>{name}</td>
                  <td>{Array.isArray(value) ? value.join(", ") : value}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <h4>Response body{result.bodyEncoding === "base64" ? " (base64)" : ""}</h4>
          {result.bodyTruncated && <p>Only the first 64 KiB are shown.</p>}
          <pre className="code">{result.body || "(empty)"}</pre>
        </section>
      )}
    </section>
  );
}

function TokenTest({
  clientId,
  credentialId,
  authType,
}: {
  clientId: string;
  credentialId: string;
  authType: string;
}) {
  const test = useMutation({
    mutationFn: async () =>
      must(
        await api.POST("/api/clients/{clientId}/credentials/{credentialId}/token-test", {
          params: { path: { clientId, credentialId } },
        }),
      ).tokenTests[0],
  });
  const result = test.data;
  return (
    <section aria-labelledby="token-test-title">
      <h2 id="token-test-title">Token test</h2>
      <p>
        Fetches a fresh token from the {authType === "oauth2" ? "provider (client credentials)" : "token URL"}{" "}
        and says whether one came and when it expires. The token itself is never shown.
      </p>
      <button type="button" disabled={test.isPending} onClick={() => test.mutate()}>
        {test.isPending ? "Fetching…" : "Fetch a token"}
      </button>
      <FormError error={test.error} />
      {result && (
        <Status>
          {result.tokenReceived
            ? `A token came (${result.tokenLength} characters), ${
                result.expiresAt
                  ? `expiring ${formatDate(result.expiresAt)} (in ${result.expiresInSeconds} seconds)`
                  : "with no expiry given"
              }, in ${Math.round(result.durationMs)} ms.`
            : `No token came (${Math.round(result.durationMs)} ms).`}
        </Status>
      )}
    </section>
  );
}

function EditCredential({
  clientId,
  credentialId,
  initial,
}: {
  clientId: string;
  credentialId: string;
  initial: Record<string, unknown>;
}) {
  const queryClient = useQueryClient();
  const schema = requestSchema("PUT", ONE);
  const form = useSchemaForm(schema, initial);
  const save = useMutation({
    mutationFn: async (body: Record<string, unknown>) =>
      must(await api.PUT(ONE, { params: { path: { clientId, credentialId } }, body: body as never }))
        .credentials[0],
    onSuccess: async (credential) => {
      if (credential) queryClient.setQueryData(credentialKey(clientId, credentialId), credential);
      await queryClient.invalidateQueries({ queryKey: credentialsKey(clientId) });
    },
  });
  const errors = { ...apiFieldErrors(schema, form.value, save.error), ...form.errors };
  return (
    <section aria-labelledby="edit-title">
      <h2 id="edit-title">Edit</h2>
      <p>
        Only the name, the notes and the default rule effect change; the secret, type and region never do.
      </p>
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
          labels={{ credentialName: "Name" }}
          hints={{
            credentialDefaultRuleEffect:
              "What happens to a request that none of the credential's access rules matches.",
          }}
          disabled={save.isPending}
        />
        <FormError error={save.error} fields={fieldNames(schema, form.value)} />
        {save.isSuccess && <Status>Credential saved.</Status>}
        <button type="submit" disabled={save.isPending}>
          Save
        </button>
      </form>
    </section>
  );
}

function DeleteCredential({
  clientId,
  credentialId,
  name,
}: {
  clientId: string;
  credentialId: string;
  name: string;
}) {
  const queryClient = useQueryClient();
  return (
    <DeleteWithProxies
      clientId={clientId}
      kind="credential"
      name={name}
      intro="Deleting it also deletes its secret, its access rules and every proxy that uses it."
      consequence="Its secret and its access rules are deleted; this cannot be undone."
      uses={(proxy) =>
        proxy.proxyProxyCredentialId === credentialId || proxy.proxyTargetCredentialId === credentialId
      }
      verb={{ one: "uses", many: "use" }}
      remove={async () => must(await api.DELETE(ONE, { params: { path: { clientId, credentialId } } }))}
      onDeleted={async () => {
        queryClient.removeQueries({ queryKey: credentialKey(clientId, credentialId) });
        await queryClient.invalidateQueries({ queryKey: credentialsKey(clientId) });
        navigate(orgPath(clientId, "credentials"));
      }}
    />
  );
}
