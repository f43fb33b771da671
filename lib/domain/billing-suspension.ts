/**
 * A suspended organisation calls nothing outside (docs/credentials.md "Suspended
 * billing"): before the Core API makes a request to a server outside on an organisation's behalf
 * (the credential test, which is also the console's target health check; the token test; the OAuth2
 * code exchange), it reads the organisation's runtime item in the region of the credential used,
 * the item the data plane admits requests by, and applies the data plane's own rule
 * (`billingSuspended`, lib/domain/dunning.ts) by the same clock: a suspended organisation gets the
 * same 402 `billing-suspended`, and nothing is sent.
 */
import { now } from "#lib/clock.ts";
import { DEFAULT_CLIENT_RUNTIME, findClientRuntime } from "#lib/db/entities/client-runtime.ts";
import { DomainError } from "#lib/shared/errors.ts";
import { BILLING_SUSPENDED, billingSuspended } from "./dunning.ts";

/** The 402 of a suspended organisation: the data plane's code and message. */
export const billingSuspendedError = () =>
  new DomainError("paymentFailed", BILLING_SUSPENDED.message, { code: BILLING_SUSPENDED.code });

/** Throws the 402 `billing-suspended` when the organisation's billing is suspended in `region`. */
export async function refuseWhileBillingSuspended(clientId: string, region: string): Promise<void> {
  const runtime = (await findClientRuntime(region, clientId)) ?? DEFAULT_CLIENT_RUNTIME;
  if (billingSuspended(runtime, now())) throw billingSuspendedError();
}
