/**
 * The "New proxy" wizard, in the recommended order of set-up (the MCP guide's, spec 4.15): the
 * region, the target, the proxy credential, the target credential, the proxy, then a test call.
 * Each step uses an existing resource or creates one (forms from the API's request schemas). The
 * regional rule (spec 1.10) is kept by the form: once the region is chosen, only resources of that
 * region are offered, and new ones are created in it.
 *
 * The end shows the proxy's URL, a curl command for its proxy credential's auth type and the test
 * call's status and `service-proxy-code`. A secret typed in this wizard may appear in that curl
 * command, on this page only: it lives in this component's memory and is never stored; a credential
 * chosen from the list shows placeholders instead.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useId, useState } from "react";
import { api } from "../api/client";
import { must } from "../api/errors";
import { orgPath } from "../org-frame";
import type { OrgPageProps } from "../org-routes";
import { Link } from "../router";
import { type JsonSchema, requestSchema } from "../schema-form";
import { FormError } from "../ui";
import type { ProxyRecord } from "./proxies";
import { SchemaForm } from "./proxies-common";

const STEPS = [
  { id: "region", name: "Region" },
  { id: "target", name: "Target" },
  { id: "proxyCredential", name: "Proxy credential" },
  { id: "targetCredential", name: "Target credential" },
  { id: "proxy", name: "Proxy" },
  { id: "test", name: "Test call" },
] as const;
type StepId = (typeof STEPS)[number]["id"];

/** Auth types by use (spec 2.5): what a caller presents, and what the gateway applies to a target. */
const AUTH_TYPES = {
  proxy: ["apiKey", "bearer", "jwt", "basicAuth", "jwtVerify"],
  target: ["apiKey", "bearer", "jwt", "basicAuth", "oauth2", "customToken", "custom", "none"],
} as const;
/** Auth types the server can present as the caller for the test call. */
const TESTABLE = ["apiKey", "bearer", "jwt", "basicAuth"];

interface Credential {
  credentialId: string;
  credentialName: string;
  credentialType: string;
  credentialAuthType: string;
  credentialRegion: string;
}
interface Target {
  targetId: string;
  targetName: string;
  targetRegion: string;
  targetBaseURL: string;
  targetTestPath: string;
}
interface ChosenCredential {
  id: string;
  name: string;
  authType: string;
  /** Typed in this wizard (memory only), for the curl command. */
  secret?: Record<string, unknown>;
}
interface TestResult {
  status: number;
  headers: Record<string, string | string[]>;
  body: string;
  durationMs: number;
}

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
const text = (value: unknown, placeholder: string) =>
  typeof value === "string" && value !== "" ? value : placeholder;

/** The curl command a caller runs, for the proxy credential's auth type (placeholders for unknown secrets). */
export function curlCommand(url: string, authType: string, secret: Record<string, unknown> = {}): string {
  switch (authType) {
    case "apiKey": {
      const name = text(secret.keyName, "<key name>");
      const value = text(secret.keyValue, "<your key>");
      if (secret.placement === "query")
        return `curl ${quote(`${url}?${encodeURIComponent(name)}=${encodeURIComponent(value)}`)}`;
      const prefix = typeof secret.prefix === "string" && secret.prefix ? `${secret.prefix} ` : "";
      return `curl -H ${quote(`${name}: ${prefix}${value}`)} ${quote(url)}`;
    }
    case "bearer": {
      const prefix = typeof secret.prefix === "string" ? secret.prefix : "Bearer";
      const token = text(secret.token, "<your token>");
      return `curl -H ${quote(`Authorization: ${prefix ? `${prefix} ` : ""}${token}`)} ${quote(url)}`;
    }
    case "jwt": {
      const prefix = typeof secret.prefix === "string" && secret.prefix ? `${secret.prefix} ` : "";
      return `curl -H ${quote(`Authorization: ${prefix}${text(secret.token, "<your JWT>")}`)} ${quote(url)}`;
    }
    case "basicAuth":
      return `curl -u ${quote(`${text(secret.username, "<user name>")}:${text(secret.password, "<password>")}`)} ${quote(url)}`;
    case "jwtVerify":
      return `curl -H ${quote("Authorization: Bearer <a JWT signed by your issuer>")} ${quote(url)}`;
    default:
      return `curl ${quote(url)}`;
  }
}

/** A free-form secret (the schema names no fields): an example of each shape as the hint. */
const SECRET_HINT = (
  <>
    JSON, shaped by the auth type: apiKey <code>{'{"keyName": "x-api-key", "keyValue": "…"}'}</code>, bearer
    or jwt <code>{'{"token": "…"}'}</code>, basicAuth <code>{'{"username": "…", "password": "…"}'}</code>,
    none <code>{"{}"}</code>. It cannot be read back after creation.
  </>
);
const isFree = (schema: JsonSchema | undefined) =>
  !!schema && !schema.type && !schema.properties && !schema.oneOf && !schema.anyOf && !schema.enum;

export function NewProxyPage({ clientId }: OrgPageProps) {
  const queryClient = useQueryClient();
  const [step, setStep] = useState<StepId>("region");
  const [region, setRegion] = useState("");
  const [target, setTarget] = useState<{ id: string; name: string; testPath: string } | null>(null);
  const [proxyCredential, setProxyCredential] = useState<ChosenCredential | null>(null);
  const [targetCredential, setTargetCredential] = useState<ChosenCredential | null>(null);
  const [proxy, setProxy] = useState<ProxyRecord | null>(null);
  const stepIndex = STEPS.findIndex((item) => item.id === step);

  const credentials = useQuery({
    queryKey: ["credentials", clientId, "all"],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/credentials", {
          params: { path: { clientId }, query: { limit: 100 } },
        }),
      ).credentials as unknown as Credential[],
  });
  const targets = useQuery({
    queryKey: ["targets", clientId, "all"],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/targets", {
          params: { path: { clientId }, query: { limit: 100 } },
        }),
      ).targets as unknown as Target[],
  });
  const refreshResources = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: ["credentials", clientId] }),
      queryClient.invalidateQueries({ queryKey: ["targets", clientId] }),
    ]);

  const targetSchema = requestSchema("POST", "/api/clients/{clientId}/targets");
  const credentialSchema = requestSchema("POST", "/api/clients/{clientId}/credentials");
  const proxySchema = requestSchema("POST", "/api/clients/{clientId}/proxies");
  // Regions already in use by the organisation, offered while typing one.
  const knownRegions = [
    ...new Set([
      ...(targets.data ?? []).map((item) => item.targetRegion),
      ...(credentials.data ?? []).map((item) => item.credentialRegion),
    ]),
  ].sort();

  const credentialsOf = (type: "proxy" | "target") =>
    (credentials.data ?? [])
      .filter((item) => item.credentialType === type && item.credentialRegion === region)
      .toSorted((a, b) => a.credentialName.localeCompare(b.credentialName))
      .map((item) => ({
        value: item.credentialId,
        label: `${item.credentialName} (${item.credentialAuthType})`,
        chosen: { id: item.credentialId, name: item.credentialName, authType: item.credentialAuthType },
      }));

  const authTypeChoices = (type: "proxy" | "target") => {
    const schema = credentialSchema.properties?.authType;
    const offered = (credentialSchema.oneOf ?? []).map((branch) => branch.properties?.authType?.const);
    const known = schema?.enum ?? (offered.length ? offered : undefined);
    return AUTH_TYPES[type]
      .filter((authType) => !known || known.includes(authType))
      .map((authType) => ({ value: authType, label: authType }));
  };

  const credentialStep = (type: "proxy" | "target") => {
    const noun = type === "proxy" ? "proxy credential" : "target credential";
    const set = type === "proxy" ? setProxyCredential : setTargetCredential;
    const next: StepId = type === "proxy" ? "targetCredential" : "proxy";
    return (
      <ChooseOrCreate
        noun={noun}
        region={region}
        existing={credentialsOf(type)}
        onChoose={(choice) => {
          set(choice.chosen);
          setStep(next);
        }}
        intro={
          type === "proxy" ? (
            <p>How your application authenticates to the proxy: callers present it with every request.</p>
          ) : (
            <p>How the gateway authenticates to the target: it is applied to every forwarded request.</p>
          )
        }
        create={
          <SchemaForm
            title={`New ${noun}`}
            headingLevel={3}
            schema={credentialSchema}
            fixed={{ credentialType: type, region }}
            prepare={(value) => ({ ...value, secret: value.secret ?? {} })}
            initial={{ authType: type === "proxy" ? "apiKey" : "none" }}
            omit={["credentialType", "region", "singleUse"]}
            labels={{
              credentialName: "Name",
              authType: "Auth type",
              credentialDefaultRuleEffect: "Default rule effect",
            }}
            hints={isFree(credentialSchema.properties?.secret) ? { secret: SECRET_HINT } : {}}
            choices={{ authType: authTypeChoices(type) }}
            submitLabel={`Create ${noun}`}
            onSubmit={async (body, value) => {
              const created = must(
                await api.POST("/api/clients/{clientId}/credentials", {
                  params: { path: { clientId } },
                  body: body as never,
                }),
              ).credentials[0] as unknown as Credential;
              await refreshResources();
              set({
                id: created.credentialId,
                name: created.credentialName,
                authType: created.credentialAuthType,
                secret:
                  typeof value.secret === "object" && value.secret !== null
                    ? (value.secret as Record<string, unknown>)
                    : undefined,
              });
              setStep(next);
              return created;
            }}
          />
        }
      />
    );
  };

  let body: ReactNode;
  if (step === "region")
    body = (
      <SchemaForm
        title="Region"
        headingLevel={2}
        schema={{
          type: "object",
          properties: { region: targetSchema.properties?.targetRegion ?? {} },
          required: ["region"],
        }}
        initial={{ region }}
        labels={{ region: "Region" }}
        hints={{
          region: `The cloud region of the proxy and of everything it uses (the regional rule): it cannot be changed later.${
            knownRegions.length ? ` In use here: ${knownRegions.join(", ")}.` : " For example us-east-1."
          }`,
        }}
        submitLabel="Continue"
        onSubmit={async (value) => {
          const chosen = String(value.region).trim();
          if (chosen !== region) {
            // Another region: what was chosen for the old one no longer fits.
            setTarget(null);
            setProxyCredential(null);
            setTargetCredential(null);
          }
          setRegion(chosen);
          setStep("target");
        }}
      />
    );
  else if (step === "target")
    body = (
      <ChooseOrCreate
        noun="target"
        region={region}
        intro={<p>The API the proxy forwards to: its base URL, and a path that answers a health check.</p>}
        existing={(targets.data ?? [])
          .filter((item) => item.targetRegion === region)
          .toSorted((a, b) => a.targetName.localeCompare(b.targetName))
          .map((item) => ({
            value: item.targetId,
            label: `${item.targetName} (${item.targetBaseURL})`,
            chosen: item,
          }))}
        onChoose={(choice) => {
          setTarget({
            id: choice.chosen.targetId,
            name: choice.chosen.targetName,
            testPath: choice.chosen.targetTestPath,
          });
          setStep("proxyCredential");
        }}
        create={
          <SchemaForm
            title="New target"
            headingLevel={3}
            schema={targetSchema}
            fixed={{ targetRegion: region }}
            initial={{ targetTestPath: "/" }}
            omit={["targetRegion"]}
            labels={{
              targetName: "Name",
              targetBaseURL: "Base URL",
              targetTestPath: "Test path",
              targetDefaultRuleEffect: "Default rule effect",
            }}
            hints={{
              targetBaseURL: "Where the target API is, for example https://api.example.com/v1.",
              targetTestPath: "A path below the base URL that answers a health check, for example /status.",
            }}
            submitLabel="Create target"
            onSubmit={async (body) => {
              const created = must(
                await api.POST("/api/clients/{clientId}/targets", {
                  params: { path: { clientId } },
                  body: body as never,
                }),
              ).targets[0] as unknown as Target;
              await refreshResources();
              setTarget({ id: created.targetId, name: created.targetName, testPath: created.targetTestPath });
              setStep("proxyCredential");
              return created;
            }}
          />
        }
      />
    );
  else if (step === "proxyCredential") body = credentialStep("proxy");
  else if (step === "targetCredential") body = credentialStep("target");
  else if (step === "proxy" && target && proxyCredential && targetCredential)
    body = (
      <SchemaForm
        title="The proxy"
        headingLevel={2}
        schema={proxySchema}
        fixed={{
          proxyRegion: region,
          proxyTargetId: target.id,
          proxyProxyCredentialId: proxyCredential.id,
          proxyTargetCredentialId: targetCredential.id,
        }}
        fields={["proxyName", "proxyAlias", "proxyDefaultRuleEffect", "notes"]}
        labels={{ proxyName: "Name", proxyAlias: "Alias", proxyDefaultRuleEffect: "Default rule effect" }}
        hints={{
          proxyAlias: "Lower case letters, digits and -, unique in the organisation.",
          proxyDefaultRuleEffect: "What a request no rule matches gets (allow unless you choose deny).",
        }}
        intro={
          <p>
            It links the target {target.name}, the proxy credential {proxyCredential.name} and the target
            credential {targetCredential.name}, in {region}. Headers, query parameters and data it adds to
            every request are set on the proxy's page.
          </p>
        }
        submitLabel="Create proxy"
        onSubmit={async (body) => {
          const created = must(
            await api.POST("/api/clients/{clientId}/proxies", {
              params: { path: { clientId } },
              body: body as never,
            }),
          ).proxies[0] as unknown as ProxyRecord;
          void queryClient.invalidateQueries({ queryKey: ["proxies", clientId] });
          setProxy(created);
          setStep("test");
          return created;
        }}
      />
    );
  else if (step === "test" && proxy && proxyCredential)
    body = (
      <TestCall
        clientId={clientId}
        proxy={proxy}
        credential={proxyCredential}
        testPath={target?.testPath ?? "/"}
      />
    );
  else body = <p>Go back to the first step.</p>;

  return (
    <>
      <p className="context">
        <Link href={orgPath(clientId, "proxies")}>All proxies</Link>
      </p>
      <h1>New proxy</h1>
      <nav aria-label="Steps">
        <ol className="steps">
          {STEPS.map((item, index) => (
            <li key={item.id} aria-current={item.id === step ? "step" : undefined}>
              {item.name}
              {index < stepIndex ? " (done)" : ""}
            </li>
          ))}
        </ol>
      </nav>
      {stepIndex > 0 && (
        <dl className="details" aria-label="Chosen so far">
          <dt>Region</dt>
          <dd>{region}</dd>
          {target && stepIndex > 1 && (
            <>
              <dt>Target</dt>
              <dd>{target.name}</dd>
            </>
          )}
          {proxyCredential && stepIndex > 2 && (
            <>
              <dt>Proxy credential</dt>
              <dd>
                {proxyCredential.name} ({proxyCredential.authType})
              </dd>
            </>
          )}
          {targetCredential && stepIndex > 3 && (
            <>
              <dt>Target credential</dt>
              <dd>
                {targetCredential.name} ({targetCredential.authType})
              </dd>
            </>
          )}
        </dl>
      )}
      <section key={step} aria-label={`Step ${stepIndex + 1} of ${STEPS.length}: ${STEPS[stepIndex]?.name}`}>
        {body}
      </section>
      {stepIndex > 0 && step !== "test" && (
        <p>
          <button
            type="button"
            className="secondary"
            onClick={() => setStep(STEPS[stepIndex - 1]?.id ?? "region")}
          >
            Back to {STEPS[stepIndex - 1]?.name.toLowerCase()}
          </button>
        </p>
      )}
    </>
  );
}

/** A step's choice: one of the region's existing resources, or a new one. */
function ChooseOrCreate<T>({
  noun,
  region,
  existing,
  onChoose,
  create,
  intro,
}: {
  noun: string;
  region: string;
  existing: Array<{ value: string; label: string; chosen: T }>;
  onChoose: (choice: { value: string; chosen: T }) => void;
  create: ReactNode;
  intro?: ReactNode;
}) {
  const [mode, setMode] = useState<"existing" | "new">(existing.length ? "existing" : "new");
  const [selected, setSelected] = useState(existing[0]?.value ?? "");
  const selectId = useId();
  const title = noun.charAt(0).toUpperCase() + noun.slice(1);
  return (
    <>
      <h2>{title}</h2>
      {intro}
      {existing.length === 0 ? (
        <p>
          No {noun} in {region} yet: create one here.
        </p>
      ) : (
        <fieldset className="choice">
          <legend>Which {noun}?</legend>
          <label className="checkbox">
            <input
              type="radio"
              name={`${selectId}-mode`}
              checked={mode === "existing"}
              onChange={() => setMode("existing")}
            />{" "}
            Use an existing {noun} of {region}
          </label>
          <label className="checkbox">
            <input
              type="radio"
              name={`${selectId}-mode`}
              checked={mode === "new"}
              onChange={() => setMode("new")}
            />{" "}
            Create a new {noun}
          </label>
        </fieldset>
      )}
      {mode === "existing" && existing.length > 0 ? (
        <form
          className="panel"
          aria-label={`Existing ${noun}`}
          onSubmit={(event) => {
            event.preventDefault();
            const choice = existing.find((item) => item.value === selected);
            if (choice) onChoose(choice);
          }}
        >
          <div className="field">
            <label htmlFor={selectId}>
              {title} (only those in {region})
            </label>
            <select id={selectId} value={selected} onChange={(event) => setSelected(event.target.value)}>
              {existing.map((item) => (
                <option key={item.value} value={item.value}>
                  {item.label}
                </option>
              ))}
            </select>
          </div>
          <button type="submit">Use this {noun}</button>
        </form>
      ) : (
        create
      )}
    </>
  );
}

/** The last step: the URL, the curl command, and a test call through the data plane. */
function TestCall({
  clientId,
  proxy,
  credential,
  testPath,
}: {
  clientId: string;
  proxy: ProxyRecord;
  credential: ChosenCredential;
  testPath: string;
}) {
  const base = (proxy.proxyUrl ?? "").replace(/\/$/, "");
  const url = `${base}/${testPath.replace(/^\//, "")}`;
  const testable = TESTABLE.includes(credential.authType);
  const curl = curlCommand(url, credential.authType, credential.secret);
  const curlId = useId();
  const call = useMutation({
    // The proxy credential's own live test, sent to the proxy's URL: the call a caller makes.
    mutationFn: async () =>
      must(
        await api.POST("/api/clients/{clientId}/credentials/{credentialId}/test", {
          params: { path: { clientId, credentialId: credential.id } },
          body: { url, method: "GET" } as never,
        }),
      ).tests[0] as unknown as TestResult,
  });
  const header = (name: string) => {
    const value = call.data?.headers[name];
    return Array.isArray(value) ? value.join(", ") : value;
  };
  return (
    <>
      <h2>Your proxy is ready</h2>
      <p>
        <Link href={orgPath(clientId, "proxies", proxy.proxyId)}>{proxy.proxyName}</Link> forwards to its
        target from this URL:
      </p>
      {proxy.proxyUrl ? (
        <dl className="details">
          <dt>Proxy URL</dt>
          <dd>
            <code>{proxy.proxyUrl}</code>
          </dd>
        </dl>
      ) : (
        <p>This region has no data-plane address configured yet.</p>
      )}
      <div className="field">
        <label htmlFor={curlId}>Curl command</label>
        <textarea id={curlId} className="code" readOnly rows={3} value={curl} />
      </div>
      <CopyButton text={curl} />
      <p className="hint">
        {credential.secret
          ? "The secret you typed is shown here only, this once; it is not stored in the console and cannot be shown again."
          : "Replace the placeholders with the proxy credential's secret."}
      </p>
      <h3>Test call</h3>
      {testable ? (
        <>
          <p>
            Sends one GET to <code>{url}</code> with the proxy credential, as a caller would.
          </p>
          <button type="button" disabled={call.isPending || !proxy.proxyUrl} onClick={() => call.mutate()}>
            {call.isSuccess ? "Send the test call again" : "Send a test call"}
          </button>
        </>
      ) : (
        <p>
          A {credential.authType} proxy credential cannot be presented by the console: call the URL with a
          token of your own.
        </p>
      )}
      {call.isPending && <p>Calling…</p>}
      <FormError error={call.error} />
      {call.data && (
        <div role="status" className="panel">
          <p>
            <strong>Status {call.data.status}</strong>
            {header("service-proxy-code") && (
              <>
                , service-proxy-code <code>{header("service-proxy-code")}</code>
              </>
            )}{" "}
            ({Math.round(call.data.durationMs)} ms)
          </p>
          {header("service-proxy-message") && <p>{header("service-proxy-message")}</p>}
        </div>
      )}
      <p>
        Next: <Link href={orgPath(clientId, "proxies", proxy.proxyId)}>open the proxy</Link> to add rules,
        headers, filters and meters, or <Link href={orgPath(clientId, "proxies")}>go to all proxies</Link>.
      </p>
    </>
  );
}

function CopyButton({ text: value }: { text: string }) {
  const [copied, setCopied] = useState<"yes" | "no" | null>(null);
  return (
    <p className="button-row">
      <button
        type="button"
        className="secondary"
        onClick={() =>
          navigator.clipboard.writeText(value).then(
            () => setCopied("yes"),
            () => setCopied("no"),
          )
        }
      >
        Copy the curl command
      </button>
      <span role="status">
        {copied === "yes" ? "Copied." : copied === "no" ? "Could not copy: select the text instead." : ""}
      </span>
    </p>
  );
}
