/**
 * The MSP's billing (issue 24): whether a payment method is on file and the MSP's billing status
 * (its configuration, read only), and for an msp_owner the button that adds or replaces the
 * payment method through the processor's Checkout in setup mode. No card data passes here: the
 * processor's hosted page collects it, and its webhook records it (the page then says so). Billing
 * a managed client to the MSP needs a payment method on file (spec 4.14, rule 4).
 */
import { useMutation, useQuery } from "@tanstack/react-query";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { useLocation } from "../router";
import { FormError, Status } from "../ui";
import { day, mspKeys, topMspRole } from "./msp-common";
import type { MspPageProps } from "./msp-routes";

/** Send the browser to the processor's hosted page. */
const go = (url: string) => window.location.assign(url);

export function MspBillingPage({ mspId, user }: MspPageProps) {
  const { search } = useLocation();
  const setup = search.get("setup");
  const me = useQuery({
    queryKey: [...mspKeys.members(mspId), "me", user.userId],
    queryFn: async () =>
      must(
        await api.GET("/api/msps/{mspId}/members/{userId}", {
          params: { path: { mspId, userId: user.userId } },
        }),
      ).members[0],
  });
  const role = me.data ? topMspRole(me.data.roles) : undefined;
  // msp_user and above read the MSP's configuration (spec 4.14).
  const canRead = role !== undefined && role !== "msp_reader";
  const configuration = useQuery({
    queryKey: mspKeys.configuration(mspId),
    queryFn: async () =>
      must(await api.GET("/api/msps/{mspId}/configurations", { params: { path: { mspId }, query: {} } }))
        .configuration,
    enabled: canRead,
    // Back from the processor: the webhook records the method moments later.
    refetchInterval: (query) =>
      setup === "success" && query.state.data?.paymentMethodOnFile === false ? 2_000 : false,
  });
  const start = useMutation({
    mutationFn: async () =>
      must(await api.POST("/api/msps/{mspId}/billing/payment-method", { params: { path: { mspId } } })),
    onSuccess: (answer) => go(answer.url),
  });
  const data = configuration.data;
  return (
    <>
      <h1>Billing</h1>
      {setup === "success" && (
        <Status>
          Payment method submitted to the processor. It shows here as on file as soon as the processor
          confirms it.
        </Status>
      )}
      {setup === "cancelled" && <Status>Setup cancelled: the payment method on file did not change.</Status>}
      {me.isError && <p role="alert">Error: {errorText(me.error)}</p>}
      {role === "msp_reader" && <p>Only the MSP's users, admins and owners see its billing.</p>}
      {configuration.isError && <p role="alert">Error: {errorText(configuration.error)}</p>}
      {canRead && configuration.isPending && <p>Loading…</p>}
      {data && (
        <>
          {data.billingStatus === "suspended" && (
            <div className="notice warning" role="alert">
              <p>
                <strong>Billing suspended.</strong> The proxies of the clients billed to the MSP answer 402
                (billing-suspended) until your operator reactivates the MSP's billing.
              </p>
            </div>
          )}
          <section aria-labelledby="payment-method-title">
            <h2 id="payment-method-title">Payment method</h2>
            <dl className="details">
              <div>
                <dt>Payment method</dt>
                <dd>
                  {data.paymentMethodOnFile
                    ? `On file${data.paymentMethodUpdated ? ` (added ${day(data.paymentMethodUpdated)})` : ""}`
                    : "None on file"}
                </dd>
              </div>
              <div>
                <dt>Billing status</dt>
                <dd>{data.billingStatus === "active" ? "Active" : "Suspended"}</dd>
              </div>
              <div>
                <dt>Billing type</dt>
                <dd>{data.billingType}</dd>
              </div>
            </dl>
            <p>
              {data.paymentMethodOnFile
                ? "The MSP's top-ups and the clients billed to it are charged to this payment method."
                : "A managed client can be billed to the MSP only once a payment method is on file."}
            </p>
            {role === "msp_owner" ? (
              <>
                <p className="hint">
                  The processor's secure page collects the card; none of it passes through this console.
                </p>
                <FormError error={start.error} />
                <button type="button" disabled={start.isPending} onClick={() => start.mutate()}>
                  {data.paymentMethodOnFile ? "Replace the payment method" : "Add a payment method"}
                </button>
              </>
            ) : (
              <p>Only an owner of the MSP can add or replace the payment method.</p>
            )}
          </section>
        </>
      )}
    </>
  );
}
