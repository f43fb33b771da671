/**
 * The payment processor (Stripe, through the official `stripe` package). Its API base is
 * configurable (STRIPE_API_BASE) so tests and staging can point it elsewhere. Without a key
 * configured, provisioning is skipped and that outcome is recorded on the client configuration.
 */
import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type Stripe from "stripe";
import { sdkCallBounds } from "#lib/aws/clients.ts";
import { getConfig } from "#lib/config.ts";
import { describeError, log } from "#lib/log.ts";
import { upstreamFailed } from "#lib/shared/errors.ts";

export type CustomerProvisioning =
  | { paymentProvider: "stripe"; paymentProvisioning: "provisioned"; paymentCustomerId: string }
  | {
      paymentProvider: null;
      paymentProvisioning: "skipped";
      paymentCustomerId: null;
      paymentProvisioningReason: string;
    };

let stripeClient: Promise<Stripe | undefined> | undefined;

async function resolveSecretKey(): Promise<string | undefined> {
  const { stripe } = getConfig();
  if (stripe.secretKey) return stripe.secretKey;
  if (!stripe.secretArn) return undefined;
  const secret = await new SecretsManagerClient(sdkCallBounds()).send(
    new GetSecretValueCommand({ SecretId: stripe.secretArn }),
  );
  return secret.SecretString?.trim() || undefined;
}

/** One Stripe client per process, created on first use (the package is loaded only then). */
function stripe(): Promise<Stripe | undefined> {
  stripeClient ??= (async () => {
    const key = await resolveSecretKey();
    if (!key) return undefined;
    const { default: StripeClass } = await import("stripe");
    const base = getConfig().stripe.apiBase ? new URL(getConfig().stripe.apiBase as string) : undefined;
    return new StripeClass(key, {
      maxNetworkRetries: 2,
      timeout: 10_000,
      telemetry: false,
      ...(base
        ? {
            host: base.hostname,
            port: base.port || (base.protocol === "https:" ? 443 : 80),
            protocol: base.protocol.replace(":", "") as "http" | "https",
          }
        : {}),
    });
  })();
  return stripeClient;
}

/**
 * The processor's client for the billing operations (lib/domain/billing.ts), or undefined when no
 * key is configured.
 */
export const paymentClient = (): Promise<Stripe | undefined> => stripe();

/** Forget the client (tests change the configuration). */
export function resetPayments(): void {
  stripeClient = undefined;
}

export async function provisionCustomer(input: {
  clientId: string;
  clientName: string;
  email?: string;
}): Promise<CustomerProvisioning> {
  const client = await stripe();
  if (!client) {
    return {
      paymentProvider: null,
      paymentProvisioning: "skipped",
      paymentCustomerId: null,
      paymentProvisioningReason: "no payment processor key configured",
    };
  }
  // The client id as idempotency key: a retried create never makes a second customer.
  const customer = await client.customers.create(
    { name: input.clientName, email: input.email, metadata: { clientId: input.clientId } },
    { idempotencyKey: `client-create-${input.clientId}` },
  );
  return { paymentProvider: "stripe", paymentProvisioning: "provisioned", paymentCustomerId: customer.id };
}

/** Compensation when the client could not be stored after the customer was created. Best effort. */
export async function deleteCustomer(customerId: string): Promise<void> {
  try {
    const client = await stripe();
    await client?.customers.del(customerId);
  } catch (error) {
    log.warn("Could not delete payment customer after a failed client creation", {
      customerId,
      ...describeError(error),
    });
  }
}

/**
 * The MSP's own customer with the payment processor (it pays for the clients billed to it). Null
 * when no processor key is configured: such an MSP has no payment method on file.
 */
export async function provisionMspCustomer(input: {
  mspId: string;
  mspName: string;
}): Promise<string | null> {
  const client = await stripe();
  if (!client) return null;
  const customer = await client.customers.create(
    { name: input.mspName, metadata: { mspId: input.mspId } },
    { idempotencyKey: `msp-create-${input.mspId}` },
  );
  return customer.id;
}

/**
 * Whether a customer has a default payment method on file (`invoice_settings.default_payment_method`,
 * or the legacy `default_source`). No processor configured, no customer, or a deleted customer: false.
 */
export async function hasDefaultPaymentMethod(customerId: string | null | undefined): Promise<boolean> {
  if (!customerId) return false;
  const client = await stripe();
  if (!client) return false;
  let customer: Stripe.Customer | Stripe.DeletedCustomer;
  try {
    customer = await client.customers.retrieve(customerId);
  } catch (error) {
    // No such customer (deleted at the processor): nothing on file. Anything else is the processor's failure.
    if ((error as { statusCode?: number }).statusCode === 404) return false;
    log.warn("Payment processor did not answer the payment-method check", {
      customerId,
      ...describeError(error),
    });
    throw upstreamFailed("The payment processor could not be reached; try again");
  }
  if (customer.deleted) return false;
  return Boolean(customer.invoice_settings?.default_payment_method || customer.default_source);
}

export type ChargeOutcome =
  | { outcome: "succeeded"; paymentIntentId: string }
  /** The processor refused it (declined card, no payment method, authentication required). */
  | { outcome: "declined"; reason: string; paymentIntentId: string | null };

/**
 * One off-session charge of a customer's default payment method: a PaymentIntent created and
 * confirmed in one call. `idempotencyKey` makes a retried call (a redelivery, a race, a resumed
 * claim) answer the first call's PaymentIntent instead of charging again (the processor keeps keys
 * for 24 h). A refusal is an outcome; an unreachable processor (or none configured) throws
 * `upstreamFailed`.
 */
export async function chargeCustomer(input: {
  customerId: string | null | undefined;
  amountCents: number;
  currency: string;
  idempotencyKey: string;
  description: string;
  metadata: Record<string, string>;
}): Promise<ChargeOutcome> {
  const client = await stripe();
  if (!client) throw upstreamFailed("No payment processor is configured");
  if (!input.customerId)
    return { outcome: "declined", reason: "no payment method on file", paymentIntentId: null };
  try {
    const customer = await client.customers.retrieve(input.customerId);
    const method = customer.deleted
      ? undefined
      : (customer.invoice_settings?.default_payment_method ?? customer.default_source ?? undefined);
    if (!method) return { outcome: "declined", reason: "no payment method on file", paymentIntentId: null };
    const intent = await client.paymentIntents.create(
      {
        amount: input.amountCents,
        currency: input.currency,
        customer: input.customerId,
        payment_method: typeof method === "string" ? method : method.id,
        off_session: true,
        confirm: true,
        description: input.description,
        metadata: input.metadata,
      },
      { idempotencyKey: input.idempotencyKey },
    );
    if (intent.status === "succeeded") return { outcome: "succeeded", paymentIntentId: intent.id };
    return { outcome: "declined", reason: `payment ${intent.status}`, paymentIntentId: intent.id };
  } catch (error) {
    const failure = error as {
      type?: string;
      statusCode?: number;
      message?: string;
      raw?: { payment_intent?: { id?: string } };
    };
    // Card errors (402) and a missing customer (404) are the payer's to fix; anything else is ours.
    if (failure.type === "StripeCardError" || failure.statusCode === 402 || failure.statusCode === 404)
      return {
        outcome: "declined",
        reason: failure.message ?? "payment declined",
        paymentIntentId: failure.raw?.payment_intent?.id ?? null,
      };
    log.warn("Payment processor did not answer a charge", {
      customerId: input.customerId,
      ...describeError(error),
    });
    throw upstreamFailed("The payment processor could not be reached; try again");
  }
}
