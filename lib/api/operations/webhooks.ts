/**
 * Public webhooks (spec 6.2): the OAuth2 provider's redirect back to `{base_url}/webhooks/oauth2`.
 * No user token comes with it (and no rate limit per token applies); the single-use, expiring
 * `state` is what authenticates it (lib/domain/oauth2-flow.ts).
 *
 * A flow started from the console (the credential was created with its session) ends on the
 * credential's page there: a 303 to `APP_URL/organisations/{clientId}/credentials/{credentialId}
 * ?oauth2=<authorized|denied|failed>`, built from the configured APP_URL and the ids the consumed
 * state holds, never from the request (no open redirect). A flow started by an API caller keeps
 * the JSON answer.
 */
import { z } from "zod";
import { access, operation, wrapped } from "#lib/api/operation.ts";
import { getConfig } from "#lib/config.ts";
import { handleStripeEvent, verifyStripeEvent } from "#lib/domain/billing-events.ts";
import { toApiCredential } from "#lib/domain/credentials.ts";
import {
  type AuthorizationState,
  consumeAuthorizationState,
  finishAuthorization,
} from "#lib/domain/oauth2-flow.ts";
import { log } from "#lib/log.ts";
import { DomainError } from "#lib/shared/errors.ts";
import { CredentialSchema } from "./credentials.ts";

/** What the provider sends back (RFC 6749 4.1.2); other parameters it adds are ignored. */
const CallbackQuery = z.object({
  state: z.string().optional(),
  code: z.string().optional(),
  error: z.string().optional(),
  error_description: z.string().optional(),
});

/** How a flow started from the console ended, as its page reads it from `?oauth2=`. */
export type ConsoleOutcome = "authorized" | "denied" | "failed";

/** What the Stripe webhook answers: what became of the event. */
const StripeWebhookAnswer = z.object({
  message: z.string(),
  outcome: z.enum(["applied", "unchanged", "duplicate", "ignored"]),
});

/** The console's page of the state's credential: APP_URL and the stored ids, nothing from the request. */
export function consoleCredentialUrl(state: AuthorizationState, outcome: ConsoleOutcome): string {
  const path = ["organisations", state.clientId, "credentials", state.credentialId]
    .map(encodeURIComponent)
    .join("/");
  return `${getConfig().appUrl}/${path}?oauth2=${outcome}`;
}

export const webhookOperations = [
  operation({
    id: "completeOAuth2Authorization",
    method: "GET",
    path: "/webhooks/oauth2",
    group: "webhooks",
    summary: "Complete an OAuth2 authorization (provider redirect)",
    description:
      "Where the OAuth2 provider redirects the browser after consent for an authorization_code or PKCE credential. Public: the single-use `state` (valid 15 minutes) identifies the credential. The `code` is exchanged at the credential's token endpoint, the tokens are encrypted into its secret and the credential becomes permanent. An unknown, used or expired state, or an `error` from the provider, is a 400; a refused code exchange a 502 with the provider's reason; the credential then stays temporary. While the organisation's billing is suspended the code is not exchanged: a 402 `billing-suspended` (the data plane's answer), the state used up. A flow started from the web console (the credential created with its session) answers instead with a 303 to the credential's page in the console, `?oauth2=authorized`, `denied` (the provider's `error`) or `failed` (the exchange or the credential refused); an unknown state is still a 400.",
    access: access.public,
    effect: "write",
    query: CallbackQuery,
    response: { status: 200, schema: wrapped("credentials", CredentialSchema) },
    errors: [400, 402, 502],
    handler: async ({ query }) => {
      const state = await consumeAuthorizationState(query);
      if (state.returnTo !== "console")
        return {
          body: {
            message: "Authorization complete: the credential is ready to use",
            credentials: [toApiCredential(await finishAuthorization(state, query))],
          },
        };
      let outcome: ConsoleOutcome = "authorized";
      try {
        await finishAuthorization(state, query);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        outcome = query.error ? "denied" : "failed";
        log.info("OAuth2 authorization started from the console did not complete", {
          clientId: state.clientId,
          credentialId: state.credentialId,
          outcome,
          reason: error.message,
        });
      }
      return {
        status: 303,
        headers: { Location: consoleCredentialUrl(state, outcome) },
        body: { message: `Authorization ${outcome}: see the credential's page`, credentials: [] },
      };
    },
  }),
  operation({
    id: "receiveStripeWebhook",
    method: "POST",
    path: "/webhooks/stripe",
    group: "webhooks",
    summary: "Receive a Stripe event (signed webhook)",
    description:
      "Where Stripe delivers the billing events of the organisations' subscriptions (docs/billing.md). Public: the `Stripe-Signature` header, verified on the raw body with the endpoint's signing secret, authenticates it; a missing or bad signature is a 400 and changes nothing. A signed event whose shape is not one the service can apply (its envelope: `id`, `type`, `created` a number, `data.object` an object; and, for a handled type, the fields it reads with their types) is a 400 `Malformed Stripe event: <field>: <problem>` and changes nothing either (no marker: a corrected delivery of the same id applies). Each event id is applied once, in any order; a stale event (older than the plan's last applied one) changes nothing. Handled: `checkout.session.completed`, `customer.subscription.created`, `customer.subscription.updated`, `customer.subscription.deleted`, `invoice.paid`, `invoice.payment_failed`; any other type, or a customer that is no organisation's, is answered 200 `ignored`. An invoice changes the plan only when it names the subscription the plan follows; one naming no subscription or another is answered 200 `unchanged`. An applied change of the plan's state writes one `billing` notification to the organisation and e-mails its owners. The completion of an upgrade from a paid tier cancels the replaced subscription at the processor (prorated; once). The completion of an MSP's setup-mode Checkout (metadata purpose `msp_payment_method`) makes its payment method the MSP customer's default and records `paymentMethodOnFile` on the MSP's configuration. A processor that cannot be reached meanwhile is a 503 (Stripe delivers again).",
    access: access.public,
    effect: "write",
    response: { status: 200, schema: StripeWebhookAnswer },
    errors: [400, 503],
    handler: async ({ headers, rawBody }) => {
      const event = await verifyStripeEvent(rawBody, headers["stripe-signature"]);
      const result = await handleStripeEvent(event);
      const messages = {
        applied: "Event applied",
        unchanged: "Event received: the plan is unchanged",
        duplicate: "Event already handled",
        ignored: "Event ignored",
      } as const;
      return { body: { message: messages[result.outcome], outcome: result.outcome } };
    },
  }),
];
