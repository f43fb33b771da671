/**
 * One managed client from the MSP's side (spec 2.14, 3, 4.14): what it is, rename, its configuration
 * (billing, rates with the clamping explained, budget, limits, regions, sharing; each part a form
 * of the PUT's own schema), a top-up of its budget, its members and detach, with the spec's 409
 * reasons in words.
 */
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useEffect, useState } from "react";
import { api, type Paths } from "../api/client";
import { ApiError, errorText, must } from "../api/errors";
import { Pager } from "../pager";
import { Link, navigate } from "../router";
import { bodyOf, type FormValue, type JsonSchema, requestSchema, SchemaFields } from "../schema-form";
import { ConfirmDialog, FormError, Status } from "../ui";
import { useMspConfiguration } from "./msp";
import { day, mspKeys, mspPath, personName, usd } from "./msp-common";
import { useSchemaForm } from "./msp-form";
import type { MspPageProps } from "./msp-routes";

const CLIENT = "/api/msps/{mspId}/clients/{clientId}";
const RENAME = requestSchema("PUT", CLIENT);
const CONFIG = requestSchema("PUT", `${CLIENT}/configurations`);
const TOP_UP = requestSchema("POST", `${CLIENT}/top-ups`);

/** The spec's floor and ceiling of a client's rate (spec 4.14, rule 1). */
const RATE_FLOOR = 0.7;
const RATE_CEILING = 1;

type Rates = { apiSeconds: number; storageGB: number; aiTokens: number; plan: number };
const RATE_NAMES: Record<keyof Rates, string> = {
  apiSeconds: "API seconds",
  storageGB: "Storage (GB)",
  aiTokens: "AI tokens",
  plan: "Plan",
};

/** The spec's reasons a detach is refused (409), in words: what must happen first. */
const DETACH_REFUSALS: Record<string, string> = {
  "Cannot detach client, no independent owner":
    "It has no owner of its own yet. A client leaves its MSP only when one of its members is an owner who is not on your MSP's team. Only a system administrator assigns the owner role through the MSP path: ask your operator to make the client's own administrator its owner, then detach.",
  "Cannot detach client, billing is charged to the MSP":
    "Its billing still goes to the MSP. Set “Billed to” to “The client” under Billing and save (the client's own payment account then pays), then detach.",
};

const keyOf = (mspId: string, clientId: string) => mspKeys.client(mspId, clientId);
const configKey = (mspId: string, clientId: string) => [...keyOf(mspId, clientId), "configuration"] as const;

export function MspClientPage({ mspId, params }: MspPageProps) {
  const clientId = params.clientId ?? "";
  const path = { mspId, clientId };
  const client = useQuery({
    queryKey: keyOf(mspId, clientId),
    queryFn: async () => must(await api.GET(CLIENT, { params: { path } })).clients[0],
  });
  const configuration = useQuery({
    queryKey: configKey(mspId, clientId),
    queryFn: async () => must(await api.GET(`${CLIENT}/configurations`, { params: { path } })).configuration,
  });
  if (client.isPending) return <p>Loading…</p>;
  if (client.isError || !client.data)
    return (
      <>
        <h1>Client not found</h1>
        {client.isError && <p role="alert">Error: {errorText(client.error)}</p>}
        <p>
          <Link href={mspPath(mspId)}>Go to the managed clients</Link>
        </p>
      </>
    );
  const data = client.data;
  return (
    <>
      <h1>{data.clientName}</h1>
      <p>
        <Link href={`/organisations/${encodeURIComponent(clientId)}/proxies`}>
          Open the console of {data.clientName}
        </Link>{" "}
        (its proxies, targets, credentials and logs, as far as it shares them).
      </p>
      <dl className="details" aria-label="The client">
        <div>
          <dt>Status</dt>
          <dd>{data.clientStatus === "pendingDeletion" ? "Marked for deletion" : "Active"}</dd>
        </div>
        <div>
          <dt>Billed to</dt>
          <dd>{data.billingTo === "msp" ? "The MSP" : "The client"}</dd>
        </div>
        <div>
          <dt>Billing status</dt>
          <dd>{data.billingStatus}</dd>
        </div>
        <div>
          <dt>Plan</dt>
          <dd>
            {data.planTier} ({data.planStatus})
          </dd>
        </div>
        <div>
          <dt>Managed since</dt>
          <dd>{day(data.mspLinkedAt)}</dd>
        </div>
      </dl>
      <Rename mspId={mspId} clientId={clientId} clientName={data.clientName} />
      {configuration.isPending && <p>Loading the configuration…</p>}
      {configuration.isError && <p role="alert">Error: {errorText(configuration.error)}</p>}
      {configuration.data && (
        <Configuration mspId={mspId} clientId={clientId} configuration={configuration.data} />
      )}
      <Members mspId={mspId} clientId={clientId} />
      <Detach mspId={mspId} clientId={clientId} clientName={data.clientName} />
    </>
  );
}

function Rename({ mspId, clientId, clientName }: { mspId: string; clientId: string; clientName: string }) {
  const queryClient = useQueryClient();
  const form = useSchemaForm(RENAME, { clientName });
  const rename = useMutation({
    mutationFn: async (body: FormValue) =>
      must(await api.PUT(CLIENT, { params: { path: { mspId, clientId } }, body })).client,
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: keyOf(mspId, clientId) });
      void queryClient.invalidateQueries({ queryKey: mspKeys.clients(mspId) });
    },
  });
  return (
    <section aria-labelledby="rename-title">
      <h2 id="rename-title">Rename</h2>
      <form
        noValidate
        aria-labelledby="rename-title"
        onSubmit={(event) => {
          event.preventDefault();
          const body = { clientName: String(form.value.clientName ?? "").trim() };
          if (form.check(body)) rename.mutate(body);
        }}
      >
        <SchemaFields
          schema={RENAME}
          value={form.value}
          onChange={form.setValue}
          errors={form.all(rename.error)}
          hints={{ clientName: "The name its members and your team see." }}
        />
        <FormError error={rename.error} fields={["clientName"]} />
        {rename.isSuccess && <Status>Renamed to {rename.data.clientName}.</Status>}
        <button type="submit" disabled={rename.isPending}>
          Save name
        </button>
      </form>
    </section>
  );
}

type ConfigurationPath = Paths["/api/msps/{mspId}/clients/{clientId}/configurations"];
type ClientConfiguration =
  ConfigurationPath["get"]["responses"][200]["content"]["application/json"]["configuration"];

function Configuration({
  mspId,
  clientId,
  configuration,
}: {
  mspId: string;
  clientId: string;
  configuration: ClientConfiguration;
}) {
  const msp = useMspConfiguration(mspId);
  const mspRates = msp.data?.rates;
  const billedByStripe = configuration.billingTo === "msp" && configuration.billingType === "stripe";
  return (
    <section aria-labelledby="configuration-title">
      <h2 id="configuration-title">Configuration</h2>
      <ConfigForm
        mspId={mspId}
        clientId={clientId}
        configuration={configuration}
        title="Billing"
        fields={["billingTo", "topUpMethod"]}
        labels={{ billingTo: "Billed to", topUpMethod: "Top-ups" }}
        choices={{
          billingTo: [
            { value: "msp", label: "The MSP" },
            { value: "client", label: "The client" },
          ],
          topUpMethod: [
            { value: "manual", label: "Manual (on demand)" },
            { value: "automatic", label: "Automatic (when the budget falls below its minimum)" },
          ],
        }}
        hints={{
          billingTo:
            "The MSP: the MSP is charged, priced at the MSP's rates, from the client's budget. The client: its own payment account is charged at the client's rates. Billing to the MSP needs a payment method on file for the MSP.",
        }}
      >
        <p>
          Billing type: {configuration.billingType} (only Stripe can be set here). Billing status:{" "}
          {configuration.billingStatus}.
        </p>
        {configuration.featureOverrides.length + configuration.promoOverrides.length > 0 && (
          <p>
            Overrides set by the operator:{" "}
            {[...configuration.featureOverrides, ...configuration.promoOverrides].join(", ")}.
          </p>
        )}
      </ConfigForm>
      <ConfigForm
        mspId={mspId}
        clientId={clientId}
        configuration={configuration}
        title="Rates"
        fields={["rates"]}
        labels={Object.fromEntries(Object.entries(RATE_NAMES).map(([key, name]) => [`rates.${key}`, name]))}
        explain={(sent, answer) => rateNotes(sent.rates as Partial<Rates>, answer.rates, mspRates)}
      >
        <p>
          The fraction of the retail price the client is charged (1 is 100%). A rate is kept between{" "}
          {RATE_FLOOR} and {RATE_CEILING} and never below the MSP's own rate for the same metric
          {mspRates
            ? ` (API seconds ${mspRates.apiSeconds}, storage ${mspRates.storageGB}, AI tokens ${mspRates.aiTokens}, plan ${mspRates.plan})`
            : ""}
          : a value outside is moved into that range, not refused, and the page says so.
        </p>
      </ConfigForm>
      <ConfigForm
        mspId={mspId}
        clientId={clientId}
        configuration={configuration}
        title="Budget"
        fields={["budget"]}
        labels={{
          "budget.minimumTopUpThreshold": "Minimum (USD)",
          "budget.maximumTopUpThreshold": "Maximum (USD)",
        }}
        explain={(sent, answer) => budgetNotes(sent.budget as FormValue | undefined, answer.budget)}
      >
        <p>
          Current budget: <strong>{usd(configuration.budget.current)}</strong> (it changes only by usage and
          top-ups). The thresholds apply only while the client is billed to the MSP by Stripe
          {billedByStripe ? "" : " (it is not now: they are kept but do nothing)"}: the minimum is at least
          $5; the maximum at least $20 and $10 above the minimum. Lower values are raised.
        </p>
      </ConfigForm>
      <TopUp
        mspId={mspId}
        clientId={clientId}
        configuration={configuration}
        billedByStripe={billedByStripe}
      />
      <ConfigForm
        mspId={mspId}
        clientId={clientId}
        configuration={configuration}
        title="Limits"
        fields={["limits"]}
        labels={{
          "limits.requestsPerMinute": "Requests per minute",
          "limits.requestsPerDay": "Requests per day",
        }}
      >
        <p>
          The most requests the client's proxies answer, enforced on the data plane (above them a caller gets
          429). Empty: no limit of its own. At most 10,000 a minute and 10,000,000 a day.
        </p>
      </ConfigForm>
      <ConfigForm
        mspId={mspId}
        clientId={clientId}
        configuration={configuration}
        title="Regions"
        fields={["regionAccess"]}
        labels={{ regionAccess: "Regions" }}
      >
        <p>
          The regions the client's credentials, targets and proxies can be created in, among this deployment's
          (now: {configuration.regionAccess.join(", ")}).
        </p>
      </ConfigForm>
      <ConfigForm
        mspId={mspId}
        clientId={clientId}
        configuration={configuration}
        title="Sharing"
        fields={["sharing"]}
        labels={{
          "sharing.proxyCredentials": "Proxy credentials",
          "sharing.targetCredentials": "Target credentials",
          "sharing.targets": "Targets",
          "sharing.proxies": "Proxies",
        }}
      >
        <p>What your team reaches in the client's console. Unchecked: your team gets 403 on that kind.</p>
      </ConfigForm>
    </section>
  );
}

/** Why a stored rate differs from the one entered: the floor, the ceiling or the MSP's own rate. */
function rateNotes(sent: Partial<Rates> | undefined, stored: Rates, mspRates: Rates | undefined): string[] {
  const notes: string[] = [];
  for (const [key, name] of Object.entries(RATE_NAMES) as Array<[keyof Rates, string]>) {
    const entered = sent?.[key];
    if (entered === undefined || entered === stored[key]) continue;
    const clamped = Math.min(Math.max(entered, RATE_FLOOR), RATE_CEILING);
    const reason =
      mspRates && stored[key] === mspRates[key] && stored[key] > clamped
        ? `it is below the MSP's own rate for ${name}, ${mspRates[key]}, and a client's rate never is`
        : entered < RATE_FLOOR
          ? `${entered} is below the floor of ${RATE_FLOOR} (70% of retail), so the floor is stored`
          : entered > RATE_CEILING
            ? `${entered} is above ${RATE_CEILING} (100% of retail), so ${RATE_CEILING} is stored`
            : "the API moved it into range";
    notes.push(`${name}: you entered ${entered}; ${stored[key]} is stored: ${reason}.`);
  }
  return notes;
}

function budgetNotes(
  sent: FormValue | undefined,
  stored: { minimumTopUpThreshold: number; maximumTopUpThreshold: number },
) {
  const notes: string[] = [];
  const min = sent?.minimumTopUpThreshold;
  const max = sent?.maximumTopUpThreshold;
  if (typeof min === "number" && min !== stored.minimumTopUpThreshold)
    notes.push(
      `Minimum: you entered ${usd(min)}; ${usd(stored.minimumTopUpThreshold)} is stored (at least $5).`,
    );
  if (typeof max === "number" && max !== stored.maximumTopUpThreshold)
    notes.push(
      `Maximum: you entered ${usd(max)}; ${usd(stored.maximumTopUpThreshold)} is stored (at least $20 and $10 above the minimum).`,
    );
  return notes;
}

/** The part of the configuration a form edits, as the form's value. */
const pick = (configuration: FormValue, fields: string[]): FormValue =>
  Object.fromEntries(fields.map((field) => [field, structuredClone(configuration[field])]));

type ConfigAnswer =
  ConfigurationPath["put"]["responses"][200]["content"]["application/json"]["configuration"];

/**
 * One part of the configuration, a form of the PUT's schema limited to `fields`; a single nested
 * object shows its own fields under the section's heading. After the answer the form shows what
 * is stored, and `explain` says why it differs from what was entered.
 */
function ConfigForm({
  mspId,
  clientId,
  configuration,
  title,
  fields,
  labels,
  hints,
  choices,
  explain,
  children,
}: {
  mspId: string;
  clientId: string;
  configuration: ClientConfiguration;
  title: string;
  fields: string[];
  labels?: Record<string, string>;
  hints?: Record<string, ReactNode>;
  choices?: Record<string, Array<{ value: string; label: string }>>;
  explain?: (sent: FormValue, answer: ConfigAnswer) => string[];
  children?: ReactNode;
}) {
  const queryClient = useQueryClient();
  const before = pick(configuration as unknown as FormValue, fields);
  const form = useSchemaForm(CONFIG, before);
  const saved = JSON.stringify(before);
  // A new configuration (another form's answer, a reload) shows in this form too.
  // biome-ignore lint/correctness/useExhaustiveDependencies: `saved` is `before`'s content
  useEffect(() => form.setValue(JSON.parse(saved)), [saved]);
  const id = `config-${title.toLowerCase()}`;
  const [notes, setNotes] = useState<string[]>([]);
  const save = useMutation({
    mutationFn: async (body: FormValue) =>
      must(
        await api.PUT(`${CLIENT}/configurations`, {
          params: { path: { mspId, clientId } },
          body: body as never,
        }),
      ).configuration,
    onSuccess: (answer, body) => {
      setNotes(explain?.(body, answer) ?? []);
      queryClient.setQueryData(configKey(mspId, clientId), { ...configuration, ...answer });
      void queryClient.invalidateQueries({ queryKey: keyOf(mspId, clientId) });
    },
  });
  const single = fields.length === 1 ? fields[0] : undefined;
  const nested = single ? (CONFIG.properties?.[single] as JsonSchema) : undefined;
  const object = nested?.type === "object" && nested.properties ? nested : undefined;
  const errors = form.all(save.error, object ? single : undefined);
  return (
    <form
      noValidate
      aria-labelledby={id}
      className="panel"
      onSubmit={(event) => {
        event.preventDefault();
        setNotes([]);
        const body = bodyOf(
          { ...CONFIG, properties: pick(CONFIG.properties ?? {}, fields) as never },
          form.value,
          before,
        );
        if (form.check(body)) save.mutate(body);
      }}
    >
      <h3 id={id}>{title}</h3>
      {children}
      {object && single ? (
        <SchemaFields
          schema={object}
          path={single}
          value={(form.value[single] ?? {}) as FormValue}
          onChange={(next) => form.setValue({ ...form.value, [single]: next })}
          errors={errors}
          labels={labels}
          hints={hints}
          choices={choices}
        />
      ) : (
        <SchemaFields
          schema={CONFIG}
          fields={fields}
          value={form.value}
          onChange={form.setValue}
          errors={errors}
          labels={labels}
          hints={hints}
          choices={choices}
        />
      )}
      <FormError
        error={save.error}
        fields={Object.keys(errors).map((path) => path.split(".").at(-1) ?? path)}
      />
      {save.isSuccess && (
        <div className={notes.length ? "notice" : undefined}>
          <Status>
            {title} saved.
            {notes.map((note) => (
              <span key={note}> {note}</span>
            ))}
          </Status>
        </div>
      )}
      <button type="submit" disabled={save.isPending}>
        Save {title.toLowerCase()}
      </button>
    </form>
  );
}

function TopUp({
  mspId,
  clientId,
  configuration,
  billedByStripe,
}: {
  mspId: string;
  clientId: string;
  configuration: ClientConfiguration;
  billedByStripe: boolean;
}) {
  const queryClient = useQueryClient();
  const form = useSchemaForm(TOP_UP);
  const [confirming, setConfirming] = useState<number | null>(null);
  const topUp = useMutation({
    mutationFn: async (amount: number) =>
      must(await api.POST(`${CLIENT}/top-ups`, { params: { path: { mspId, clientId } }, body: { amount } })),
    onSuccess: (answer) => {
      form.setValue({});
      queryClient.setQueryData(configKey(mspId, clientId), { ...configuration, budget: answer.budget });
    },
  });
  const room = configuration.budget.maximumTopUpThreshold - configuration.budget.current;
  return (
    <form
      noValidate
      aria-labelledby="top-up-title"
      className="panel"
      onSubmit={(event) => {
        event.preventDefault();
        const amount = form.value.amount;
        if (form.check({ amount }) && typeof amount === "number") setConfirming(amount);
      }}
    >
      <h3 id="top-up-title">Top up the budget</h3>
      {billedByStripe ? (
        <p>
          Charges the MSP's payment method now and adds the amount to the client's budget (
          {usd(configuration.budget.current)} now). At least $0.50, in whole cents; the budget may not end
          above its maximum of {usd(configuration.budget.maximumTopUpThreshold)}, so at most{" "}
          {usd(Math.max(room, 0))} now.
        </p>
      ) : (
        <p>
          Top-ups are for clients billed to the MSP by Stripe. This one is billed to{" "}
          {configuration.billingTo === "msp" ? `the MSP by ${configuration.billingType}` : "the client"}: set
          “Billed to” to “The MSP” under Billing first.
        </p>
      )}
      <SchemaFields
        schema={TOP_UP}
        value={form.value}
        onChange={form.setValue}
        errors={form.all(topUp.error)}
        labels={{ amount: "Amount (USD)" }}
        disabled={!billedByStripe}
      />
      <FormError error={topUp.error} fields={["amount"]} />
      {topUp.isSuccess && (
        <Status>
          Topped up {usd(topUp.data.topUp.amount)} ({topUp.data.topUp.status}): the budget is now{" "}
          {usd(topUp.data.budget.current)}.
        </Status>
      )}
      <button type="submit" disabled={!billedByStripe || topUp.isPending}>
        Top up
      </button>
      <ConfirmDialog
        open={confirming !== null}
        title={`Charge ${usd(confirming ?? 0)} to the MSP?`}
        confirmLabel={`Top up ${usd(confirming ?? 0)}`}
        onCancel={() => setConfirming(null)}
        onConfirm={() => {
          if (confirming !== null) topUp.mutate(confirming);
          setConfirming(null);
        }}
      >
        <p>
          The MSP's payment method is charged {usd(confirming ?? 0)} now, and the client's budget grows by as
          much. A charge cannot be undone here.
        </p>
      </ConfirmDialog>
    </form>
  );
}

const CLIENT_ROLE_NAMES: Record<string, string> = {
  owner: "Owner",
  admin: "Admin",
  devops: "DevOps",
  user: "User",
  reader: "Reader",
};

function Members({ mspId, clientId }: { mspId: string; clientId: string }) {
  const [page, setPage] = useState(1);
  const members = useQuery({
    queryKey: [...keyOf(mspId, clientId), "members", page],
    queryFn: async () =>
      must(
        await api.GET(`${CLIENT}/members`, {
          params: { path: { mspId, clientId }, query: { page, limit: 20 } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const list = members.data?.members;
  return (
    <section aria-labelledby="client-members-title">
      <h2 id="client-members-title">Members</h2>
      {members.isPending && <p>Loading…</p>}
      {members.isError && <p role="alert">Error: {errorText(members.error)}</p>}
      {list?.length === 0 && (
        <p>
          No members: your team runs it from the MSP. Before it can be detached it needs an owner of its own
          (see <a href="#detach-title">Detach</a>).
        </p>
      )}
      {list && list.length > 0 && (
        <ul aria-labelledby="client-members-title" className="rows">
          {list.map((member) => (
            <li key={member.userId}>
              {personName(member)}: {member.roles.map((role) => CLIENT_ROLE_NAMES[role] ?? role).join(", ")}
            </li>
          ))}
        </ul>
      )}
      <Pager label="members" pagination={members.data?.pagination} onPage={setPage} />
    </section>
  );
}

function Detach({ mspId, clientId, clientName }: { mspId: string; clientId: string; clientName: string }) {
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const detach = useMutation({
    mutationFn: async () => must(await api.DELETE(CLIENT, { params: { path: { mspId, clientId } } })),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: keyOf(mspId, clientId) });
      await queryClient.invalidateQueries({ queryKey: mspKeys.clients(mspId) });
      navigate(`${mspPath(mspId)}?detached=${encodeURIComponent(clientName)}`);
    },
    // A refusal may come from members or billing changed elsewhere: show the client as it is now.
    onError: () => queryClient.invalidateQueries({ queryKey: keyOf(mspId, clientId) }),
  });
  const refusal =
    detach.error instanceof ApiError && detach.error.status === 409
      ? DETACH_REFUSALS[detach.error.message]
      : undefined;
  return (
    <section aria-labelledby="detach-title">
      <h2 id="detach-title">Detach</h2>
      <p>
        Detaching ends your MSP's management of the client; the client is not deleted. It needs an owner
        member of its own (not on your MSP's team), and it must be billed to the client, not the MSP.
      </p>
      <button
        type="button"
        className="danger"
        onClick={() => setConfirming(true)}
        disabled={detach.isPending}
      >
        Detach client
      </button>
      {detach.error && (
        <div role="alert" className="error">
          <p>Error: {errorText(detach.error)}.</p>
          {refusal && <p>{refusal}</p>}
        </div>
      )}
      <ConfirmDialog
        open={confirming}
        title={`Detach ${clientName}?`}
        confirmLabel="Detach client"
        onCancel={() => setConfirming(false)}
        onConfirm={() => {
          detach.mutate();
          setConfirming(false);
        }}
      >
        <p>
          Your team loses access to its credentials, targets, proxies and logs, and it leaves this MSP's list
          and usage report. Its members, resources and history stay; its owner runs it from now on.
        </p>
      </ConfirmDialog>
    </section>
  );
}
