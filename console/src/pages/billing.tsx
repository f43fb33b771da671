/**
 * An organisation's Billing page (issue 24): its plan (tier, status, renewal, any pending change,
 * the requests per minute it grants), who pays, a failed payment or a suspension explained with
 * what to do; for an owner, an upgrade through the processor's Checkout, a downgrade at the
 * period's end (confirmed), the Billing Portal and the invoices; the operator's feature and promo
 * overrides when there are any. Other members see the plan without the controls. No card data passes here: the processor's hosted pages collect it.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import type { paths } from "../api/schema";
import type { OrgPageProps } from "../org-routes";
import { useLocation } from "../router";
import { humanise, requestSchema } from "../schema";
import { ConfirmDialog, FormError, Status } from "../ui";
import { formatDate, useMembership } from "./credentials-common";

const billingKey = (clientId: string) => ["billing", clientId] as const;

/** Every tier in ascending order, as the API's checkout body declares them. */
const TIERS = (requestSchema("POST", "/api/clients/{clientId}/billing/checkout").properties?.planTier?.enum ??
  []) as string[];
const tierName = (tier: string) => humanise(tier);
const rank = (tier: string) => TIERS.indexOf(tier);

const STATUS_WORDS: Record<string, string> = {
  active: "Active",
  upgrade_requested: "Upgrade requested: waiting for the payment to be confirmed",
  downgrade_scheduled: "Change scheduled at the end of the period",
  payment_failed: "Payment failed",
  expired: "Expired: the basic plan's limits apply",
};

/** What each known override means to the organisation (lib/domain/feature-overrides.ts). */
const OVERRIDE_WORDS: Record<string, string> = {
  core_api_rate_limit_x10:
    "ten times the plan's requests per minute per API token on the Core API (proxy credentials keep the plan's)",
  extended_trial: "an extended trial agreed with the operator",
};

/** Send the browser to the processor's hosted page. */
const go = (url: string) => window.location.assign(url);

export function BillingPage({ clientId, user }: OrgPageProps) {
  const { search } = useLocation();
  const billing = useQuery({
    queryKey: billingKey(clientId),
    queryFn: async () =>
      must(await api.GET("/api/clients/{clientId}/billing", { params: { path: { clientId } } })).billing,
  });
  const member = useMembership(clientId, user.userId);
  const isOwner = member.data?.roles.includes("owner") ?? false;
  const checkout = search.get("checkout");

  if (billing.isPending) return <p>Loading…</p>;
  if (billing.isError)
    return (
      <>
        <h1>Billing</h1>
        <p role="alert">Error: {errorText(billing.error)}</p>
      </>
    );
  const data = billing.data;
  const selfBilled = data.billingTo === "client";
  return (
    <>
      <h1>Billing</h1>
      {checkout === "success" && (
        <Status>
          Payment submitted to the processor. The plan changes as soon as the processor confirms it; this page
          shows the new plan then.
        </Status>
      )}
      {checkout === "cancelled" && <Status>Checkout cancelled: nothing was charged.</Status>}
      {data.billingStatus === "suspended" ? (
        <div className="notice warning" role="alert">
          <p>
            <strong>Billing suspended.</strong> Your proxies answer 402 (billing-suspended) until the unpaid
            invoice is paid.{" "}
            {selfBilled
              ? "An owner pays it, or changes the card, in the Billing Portal; service resumes on the next request after the payment."
              : "Your MSP pays for this organisation: ask them."}
          </p>
        </div>
      ) : data.planStatus === "payment_failed" ? (
        <div className="notice warning" role="alert">
          <p>
            <strong>A payment failed</strong>
            {data.paymentFailedAt ? ` on ${formatDate(data.paymentFailedAt)}` : ""}. The processor retries it.
            {data.suspendsAt
              ? ` If it is still unpaid on ${formatDate(data.suspendsAt)}, your proxies answer 402 (billing-suspended) until it is paid.`
              : ""}{" "}
            An owner updates the payment method in the Billing Portal.
          </p>
        </div>
      ) : null}

      <section aria-labelledby="plan-title">
        <h2 id="plan-title">Plan</h2>
        <dl className="details">
          <div>
            <dt>Plan</dt>
            <dd>{tierName(data.planTier)}</dd>
          </div>
          <div>
            <dt>Status</dt>
            <dd>{STATUS_WORDS[data.planStatus] ?? data.planStatus}</dd>
          </div>
          <div>
            <dt>Requests per minute</dt>
            <dd>{data.requestsPerMinute.toLocaleString()} per API token and per proxy credential</dd>
          </div>
          <div>
            <dt>Renews</dt>
            <dd>
              {data.planExpiresAt
                ? formatDate(data.planExpiresAt)
                : "No paid period (the basic plan is free)"}
            </dd>
          </div>
          {data.planPendingTier && (
            <div>
              <dt>Pending change</dt>
              <dd>
                To {tierName(data.planPendingTier)}
                {data.planPendingEffectiveAt
                  ? ` on ${formatDate(data.planPendingEffectiveAt)}`
                  : " once the payment is confirmed"}
              </dd>
            </div>
          )}
          <div>
            <dt>Paid by</dt>
            <dd>{selfBilled ? "This organisation" : "Your managed service provider (MSP)"}</dd>
          </div>
        </dl>
      </section>

      {data.featureOverrides.length + data.promoOverrides.length > 0 && (
        <section aria-labelledby="overrides-title">
          <h2 id="overrides-title">Overrides</h2>
          <p>
            Set by the operator of the service, beyond what the plan grants (docs/billing.md "Overrides").
          </p>
          <ul>
            {[...data.featureOverrides, ...data.promoOverrides].map((value) => (
              <li key={value}>
                <code>{value}</code>
                {OVERRIDE_WORDS[value] ? `: ${OVERRIDE_WORDS[value]}` : ""}
              </li>
            ))}
          </ul>
        </section>
      )}

      {!selfBilled ? (
        <p>Your MSP pays for this organisation's plan: ask them to change it.</p>
      ) : member.isPending ? null : isOwner ? (
        <OwnerControls clientId={clientId} billing={data} />
      ) : (
        <p>Only an owner of the organisation can change the plan or see the invoices.</p>
      )}
    </>
  );
}

type Billing =
  paths["/api/clients/{clientId}/billing"]["get"]["responses"][200]["content"]["application/json"]["billing"];

function OwnerControls({ clientId, billing }: { clientId: string; billing: Billing }) {
  const queryClient = useQueryClient();
  const upgradeId = useId();
  const downgradeId = useId();
  const current = billing.planStatus === "expired" ? "basic" : billing.planTier;
  const higher = billing.tiersForSale.filter((tier) => rank(tier) > rank(current));
  const lower = ["basic", ...billing.tiersForSale].filter((tier) => rank(tier) < rank(current));
  const [upgradeTo, setUpgradeTo] = useState(higher[0] ?? "");
  const [downgradeTo, setDowngradeTo] = useState(lower[0] ?? "");
  const [confirming, setConfirming] = useState(false);
  const path = { clientId };

  const upgrade = useMutation({
    mutationFn: async () =>
      must(
        await api.POST("/api/clients/{clientId}/billing/checkout", {
          params: { path },
          body: { planTier: upgradeTo as "team" },
        }),
      ),
    onSuccess: (answer) => go(answer.url),
  });
  const downgrade = useMutation({
    mutationFn: async () =>
      must(
        await api.POST("/api/clients/{clientId}/billing/downgrade", {
          params: { path },
          body: { planTier: downgradeTo as "basic" },
        }),
      ),
    onSuccess: () => {
      setConfirming(false);
      void queryClient.invalidateQueries({ queryKey: billingKey(clientId) });
    },
  });
  const portal = useMutation({
    mutationFn: async () =>
      must(await api.POST("/api/clients/{clientId}/billing/portal", { params: { path } })),
    onSuccess: (answer) => go(answer.url),
  });
  const busy = billing.planStatus === "payment_failed" || billing.planStatus === "downgrade_scheduled";

  return (
    <>
      <section aria-labelledby="change-title">
        <h2 id="change-title">Change the plan</h2>
        {busy && (
          <p>
            {billing.planStatus === "payment_failed"
              ? "The plan cannot change while a payment is failing: pay it in the Billing Portal first."
              : "A change is already scheduled for the end of the period."}
          </p>
        )}
        {higher.length > 0 ? (
          <form
            aria-labelledby={`${upgradeId}-title`}
            onSubmit={(event) => {
              event.preventDefault();
              upgrade.mutate();
            }}
          >
            <h3 id={`${upgradeId}-title`}>Upgrade</h3>
            <p className="hint">
              The new plan and its limits start as soon as the payment is confirmed; the processor's Checkout
              page takes the payment.
            </p>
            <div className="field">
              <label htmlFor={upgradeId}>Upgrade to</label>
              <select id={upgradeId} value={upgradeTo} onChange={(event) => setUpgradeTo(event.target.value)}>
                {higher.map((tier) => (
                  <option key={tier} value={tier}>
                    {tierName(tier)}
                  </option>
                ))}
              </select>
            </div>
            <FormError error={upgrade.error} />
            <button type="submit" disabled={upgrade.isPending || busy}>
              Upgrade
            </button>
          </form>
        ) : (
          <p>No higher plan is sold online. Contact the operator for a custom plan.</p>
        )}
        {lower.length > 0 && billing.planStatus !== "expired" && (
          <form
            aria-labelledby={`${downgradeId}-title`}
            onSubmit={(event) => {
              event.preventDefault();
              setConfirming(true);
            }}
          >
            <h3 id={`${downgradeId}-title`}>Downgrade or cancel</h3>
            <p className="hint">
              Takes effect at the end of the paid period; until then the current plan and its limits stay.
            </p>
            <div className="field">
              <label htmlFor={downgradeId}>Change to</label>
              <select
                id={downgradeId}
                value={downgradeTo}
                onChange={(event) => setDowngradeTo(event.target.value)}
              >
                {lower.map((tier) => (
                  <option key={tier} value={tier}>
                    {tierName(tier)}
                    {tier === "basic" ? " (cancels the subscription)" : ""}
                  </option>
                ))}
              </select>
            </div>
            <FormError error={downgrade.error} />
            <button type="submit" className="secondary" disabled={downgrade.isPending || busy}>
              Schedule the change
            </button>
          </form>
        )}
        <ConfirmDialog
          open={confirming}
          title={`Change to ${tierName(downgradeTo)}?`}
          confirmLabel="Schedule the change"
          cancelLabel="Keep the current plan"
          onConfirm={() => downgrade.mutate()}
          onCancel={() => setConfirming(false)}
        >
          <p>
            The {tierName(current)} plan stays until the end of the paid period
            {billing.planExpiresAt ? ` (${formatDate(billing.planExpiresAt)})` : ""}; then{" "}
            {downgradeTo === "basic"
              ? "the subscription ends and the basic plan's limits apply (100 requests per minute)."
              : `the ${tierName(downgradeTo)} plan starts, at its price from the next invoice.`}
          </p>
        </ConfirmDialog>
      </section>
      <section aria-labelledby="portal-title">
        <h2 id="portal-title">Payment methods and invoices</h2>
        <p>The processor's Billing Portal manages cards, invoices and cancellation.</p>
        <FormError error={portal.error} />
        <button
          type="button"
          className="secondary"
          disabled={portal.isPending}
          onClick={() => portal.mutate()}
        >
          Open the Billing Portal
        </button>
        <Invoices clientId={clientId} />
      </section>
    </>
  );
}

function Invoices({ clientId }: { clientId: string }) {
  const invoices = useQuery({
    queryKey: ["invoices", clientId],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/billing/invoices", {
          params: { path: { clientId }, query: { limit: 20 } },
        }),
      ),
  });
  if (invoices.isPending) return <p>Loading the invoices…</p>;
  if (invoices.isError) return <p role="alert">Error: {errorText(invoices.error)}</p>;
  const list = invoices.data.invoices;
  if (list.length === 0) return <p>No invoices yet: the first comes with the first paid plan.</p>;
  return (
    <table>
      <caption>Invoices, newest first{invoices.data.hasMore ? " (the 20 most recent)" : ""}</caption>
      <thead>
        <tr>
          <th scope="col">Invoice</th>
          <th scope="col">Date</th>
          <th scope="col">Status</th>
          <th scope="col">Total</th>
        </tr>
      </thead>
      <tbody>
        {list.map((invoice) => (
          <tr key={invoice.invoiceId}>
            <th scope="row">
              {invoice.hostedInvoiceUrl ? (
                <a href={invoice.hostedInvoiceUrl}>{invoice.number ?? invoice.invoiceId}</a>
              ) : (
                (invoice.number ?? invoice.invoiceId)
              )}
            </th>
            <td>{formatDate(invoice.created)}</td>
            <td>{invoice.status ?? "—"}</td>
            <td>
              {invoice.total.toFixed(2)} {invoice.currency.toUpperCase()}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
