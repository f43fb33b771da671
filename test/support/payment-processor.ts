/**
 * A payment-processor API on loopback that speaks the part of Stripe's REST API the service uses
 * (customers: create, retrieve, update of the default payment method, delete; payment intents:
 * create and confirm; Checkout Sessions in subscription and setup mode, and their expiry; setup
 * intents: retrieve; Billing Portal sessions; invoices: list; subscriptions: list, retrieve, update,
 * cancel), so the real `stripe`
 * package is exercised over real HTTP. It records every request, honours idempotency keys as
 * Stripe does, and can be told to fail. A customer whose default payment method is
 * `pm_card_chargeDeclined` is declined (402 card_error), as Stripe's test card of that name.
 *
 * What a person does on Stripe's hosted pages, tests do with `completeCheckout` (the session
 * completes: a subscription and its paid invoice, or a setup intent with a new payment method);
 * `addInvoice` and `addSubscription` seed what the dashboard would show. Object shapes follow
 * API version 2025-03-31 and later (a subscription's period is on its items).
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { resetConfig } from "#lib/config.ts";
import { resetWebhookSecret } from "#lib/domain/billing-events.ts";
import { resetPayments } from "#lib/domain/payments.ts";

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  idempotencyKey: string | undefined;
  form: URLSearchParams;
  /** The query string (list calls send their parameters there). */
  query: URLSearchParams;
}

type StripeObject = Record<string, unknown> & { id: string };

/** What `completeCheckout` made: a subscription (subscription mode) or a payment method (setup mode). */
export interface CheckoutCompletion {
  session: StripeObject;
  subscription?: StripeObject;
  invoice?: StripeObject;
  setupIntent?: StripeObject;
  paymentMethodId?: string;
}

export interface PaymentProcessor {
  url: string;
  requests: RecordedRequest[];
  customers: Map<string, Record<string, unknown>>;
  /** Every PaymentIntent created (an idempotent replay is not a new one), succeeded or declined. */
  paymentIntents: Record<string, unknown>[];
  checkoutSessions: Map<string, StripeObject>;
  portalSessions: Map<string, StripeObject>;
  subscriptions: Map<string, StripeObject>;
  /** The setup intents a setup-mode Checkout made (GET /v1/setup_intents/{id} reads them). */
  setupIntents: Map<string, StripeObject>;
  /** Newest last. */
  invoices: StripeObject[];
  /** The hosted page's work: the session completes (see CheckoutCompletion). */
  completeCheckout(sessionId: string): CheckoutCompletion;
  /** An invoice of a customer, as the processor would have issued it (amounts in cents). */
  addInvoice(customerId: string, fields?: Record<string, unknown>): StripeObject;
  /** An active subscription of a customer to `price`, its period from now for 30 days. */
  addSubscription(customerId: string, price: string, metadata?: Record<string, string>): StripeObject;
  failNext(status: number): void;
  /** Run `hook` (awaited) when a request arrives, before it is answered; undefined removes it. */
  onRequest(hook: ((request: RecordedRequest) => Promise<void> | void) | undefined): void;
  /** Set (or, with null, clear) a customer's default payment method, as the dashboard would. */
  setDefaultPaymentMethod(customerId: string, paymentMethodId: string | null): void;
  close(): Promise<void>;
}

export async function startPaymentProcessor(): Promise<PaymentProcessor> {
  const requests: RecordedRequest[] = [];
  const customers = new Map<string, Record<string, unknown>>();
  const paymentIntents: Record<string, unknown>[] = [];
  const byIdempotencyKey = new Map<string, Record<string, unknown>>();
  const checkoutSessions = new Map<string, StripeObject>();
  const portalSessions = new Map<string, StripeObject>();
  const subscriptions = new Map<string, StripeObject>();
  const setupIntents = new Map<string, StripeObject>();
  const invoices: StripeObject[] = [];
  let failures: number[] = [];
  let hook: ((request: RecordedRequest) => Promise<void> | void) | undefined;
  let base = "";
  const nowSeconds = () => Math.floor(Date.now() / 1000);
  const DAY = 86_400;

  function addSubscription(customerId: string, price: string, metadata: Record<string, string> = {}) {
    const start = nowSeconds();
    const id = newId("sub");
    const subscription: StripeObject = {
      id,
      object: "subscription",
      customer: customerId,
      status: "active",
      cancel_at_period_end: false,
      cancel_at: null,
      created: start,
      start_date: start,
      billing_cycle_anchor: start,
      metadata,
      items: {
        object: "list",
        data: [
          {
            id: newId("si"),
            object: "subscription_item",
            subscription: id,
            quantity: 1,
            price: { id: price, object: "price", recurring: { interval: "month", interval_count: 1 } },
            current_period_start: start,
            current_period_end: start + 30 * DAY,
          },
        ],
        has_more: false,
        url: `/v1/subscription_items?subscription=${id}`,
      },
      latest_invoice: null,
    };
    subscriptions.set(id, subscription);
    return subscription;
  }

  function addInvoice(customerId: string, fields: Record<string, unknown> = {}) {
    const created = nowSeconds() + invoices.length; // strictly increasing, as newest-first needs
    const id = newId("in");
    const invoice: StripeObject = {
      id,
      object: "invoice",
      customer: customerId,
      number: `${customerId.slice(4, 12).toUpperCase()}-${String(invoices.length + 1).padStart(4, "0")}`,
      status: "paid",
      currency: "usd",
      amount_due: 4900,
      amount_paid: 4900,
      total: 4900,
      created,
      period_start: created,
      period_end: created + 30 * DAY,
      hosted_invoice_url: `${base}/invoices/${id}`,
      invoice_pdf: `${base}/invoices/${id}/pdf`,
      ...fields,
    };
    invoices.push(invoice);
    return invoice;
  }

  function completeCheckout(sessionId: string): CheckoutCompletion {
    const session = checkoutSessions.get(sessionId);
    if (!session) throw new Error(`no Checkout Session ${sessionId}`);
    if (session.status !== "open") throw new Error(`Checkout Session ${sessionId} is ${session.status}`);
    session.status = "complete";
    const customer = String(session.customer);
    if (session.mode === "setup") {
      const paymentMethodId = newId("pm");
      const setupIntent: StripeObject = {
        id: newId("seti"),
        object: "setup_intent",
        customer,
        payment_method: paymentMethodId,
        status: "succeeded",
        metadata: (session.setup_intent_data as { metadata?: unknown } | undefined)?.metadata ?? {},
      };
      setupIntents.set(setupIntent.id, setupIntent);
      session.setup_intent = setupIntent.id;
      return { session, setupIntent, paymentMethodId };
    }
    const lineItems = (session.line_items as { price: string }[] | undefined) ?? [];
    const subscription = addSubscription(
      customer,
      String(lineItems[0]?.price),
      ((session.subscription_data as { metadata?: Record<string, string> } | undefined)?.metadata ??
        {}) as Record<string, string>,
    );
    const invoice = addInvoice(customer, { subscription: subscription.id });
    subscription.latest_invoice = invoice.id;
    session.subscription = subscription.id;
    session.invoice = invoice.id;
    session.payment_status = "paid";
    return { session, subscription, invoice };
  }

  const invalid = (message: string, param?: string) => ({
    status: 400,
    body: { error: { type: "invalid_request_error", message, ...(param ? { param } : {}) } },
  });
  const missing = (kind: string, id: string) => ({
    status: 404,
    body: {
      error: { type: "invalid_request_error", code: "resource_missing", message: `No such ${kind}: '${id}'` },
    },
  });
  const list = (data: unknown[], url: string, hasMore = false) => ({
    status: 200,
    body: { object: "list", data, has_more: hasMore, url },
  });

  /** Checkout, the Billing Portal, invoices and subscriptions; undefined for any other route. */
  function billingRoute(
    method: string,
    path: string,
    form: URLSearchParams,
    query: URLSearchParams,
  ): { status: number; body: unknown } | undefined {
    const params = nestedForm(form);
    if (method === "POST" && path === "/v1/checkout/sessions") {
      const mode = String(params.mode ?? "");
      const customer = String(params.customer ?? "");
      if (!["subscription", "setup", "payment"].includes(mode))
        return invalid("Missing required param: mode.", "mode");
      if (!customers.has(customer)) return missing("customer", customer);
      if (!params.success_url) return invalid("Missing required param: success_url.", "success_url");
      const lineItems = (params.line_items as { price?: string; quantity?: string }[] | undefined) ?? [];
      if (mode === "subscription" && !lineItems[0]?.price)
        return invalid("You must specify `line_items` in `subscription` mode.", "line_items");
      if (mode === "setup" && !params.currency && !params.payment_method_types)
        return invalid(
          "You must provide `currency` in `setup` mode when `payment_method_types` is not set.",
          "currency",
        );
      const id = `cs_test_${randomBytes(12).toString("hex")}`;
      const session: StripeObject = {
        id,
        object: "checkout.session",
        mode,
        customer,
        currency: params.currency ?? null,
        client_reference_id: params.client_reference_id ?? null,
        success_url: params.success_url,
        cancel_url: params.cancel_url ?? null,
        metadata: params.metadata ?? {},
        line_items: lineItems.map((item) => ({ price: item.price, quantity: Number(item.quantity ?? 1) })),
        subscription_data: params.subscription_data ?? null,
        setup_intent_data: params.setup_intent_data ?? null,
        status: "open",
        payment_status: mode === "setup" ? "no_payment_required" : "unpaid",
        subscription: null,
        setup_intent: null,
        invoice: null,
        created: nowSeconds(),
        expires_at: nowSeconds() + DAY,
        url: `${base}/checkout/pay/${id}`,
      };
      checkoutSessions.set(id, session);
      return { status: 200, body: session };
    }
    const expire = /^\/v1\/checkout\/sessions\/([^/]+)\/expire$/.exec(path);
    if (method === "POST" && expire?.[1]) {
      const session = checkoutSessions.get(expire[1]);
      if (!session) return missing("checkout.session", expire[1]);
      if (session.status !== "open")
        return invalid(`Only Checkout Sessions with a status of open can be expired.`);
      session.status = "expired";
      return { status: 200, body: session };
    }
    if (method === "POST" && path === "/v1/billing_portal/sessions") {
      const customer = String(params.customer ?? "");
      if (!customers.has(customer)) return missing("customer", customer);
      const id = `bps_${randomBytes(12).toString("hex")}`;
      const session: StripeObject = {
        id,
        object: "billing_portal.session",
        customer,
        return_url: params.return_url ?? null,
        created: nowSeconds(),
        livemode: false,
        url: `${base}/billing/p/session/${id}`,
      };
      portalSessions.set(id, session);
      return { status: 200, body: session };
    }
    if (method === "GET" && path === "/v1/invoices") {
      const customer = query.get("customer");
      const limit = Math.min(Math.max(Number(query.get("limit") ?? 10), 1), 100);
      const newestFirst = invoices.filter((invoice) => !customer || invoice.customer === customer).reverse();
      const after = query.get("starting_after");
      const start = after ? newestFirst.findIndex((invoice) => invoice.id === after) + 1 : 0;
      if (after && start === 0) return missing("invoice", after);
      const page = newestFirst.slice(start, start + limit);
      return list(page, "/v1/invoices", start + limit < newestFirst.length);
    }
    if (method === "GET" && path === "/v1/subscriptions") {
      const customer = query.get("customer");
      const status = query.get("status");
      const found = [...subscriptions.values()].filter(
        (subscription) =>
          (!customer || subscription.customer === customer) && (!status || subscription.status === status),
      );
      return list(found.slice(0, Number(query.get("limit") ?? 10)), "/v1/subscriptions");
    }
    const setup = /^\/v1\/setup_intents\/([^/]+)$/.exec(path);
    if (method === "GET" && setup?.[1]) {
      const intent = setupIntents.get(setup[1]);
      return intent ? { status: 200, body: intent } : missing("setup_intent", setup[1]);
    }
    const sub = /^\/v1\/subscriptions\/([^/]+)$/.exec(path);
    if (sub?.[1]) {
      const subscription = subscriptions.get(sub[1]);
      if (!subscription) return missing("subscription", sub[1]);
      if (method === "GET") return { status: 200, body: subscription };
      if (method === "DELETE") {
        // Stripe refuses to cancel a subscription twice.
        if (subscription.status === "canceled")
          return invalid(`A canceled subscription can only update its cancellation_details and metadata.`);
        subscription.status = "canceled";
        subscription.canceled_at = nowSeconds();
        subscription.ended_at = nowSeconds();
        // The package sends a DELETE's parameters in the query string.
        subscription.cancellation = {
          prorate: query.get("prorate"),
          invoice_now: query.get("invoice_now"),
        };
        return { status: 200, body: subscription };
      }
      if (method !== "POST") return undefined;
      if (params.cancel_at_period_end !== undefined) {
        subscription.cancel_at_period_end = params.cancel_at_period_end === "true";
        const item = (subscription.items as { data: { current_period_end: number }[] }).data[0];
        subscription.cancel_at = subscription.cancel_at_period_end
          ? (item?.current_period_end ?? null)
          : null;
      }
      const items = (subscription.items as { data: { id: string; price: { id: string } }[] }).data;
      for (const change of (params.items as { id?: string; price?: string }[] | undefined) ?? []) {
        const item = items.find((candidate) => candidate.id === change.id);
        if (!item) return missing("subscription_item", String(change.id));
        if (change.price) item.price = { ...item.price, id: change.price };
      }
      if (params.proration_behavior !== undefined)
        subscription.last_proration_behavior = params.proration_behavior;
      if (params.metadata)
        subscription.metadata = { ...(subscription.metadata as object), ...(params.metadata as object) };
      return { status: 200, body: subscription };
    }
    return undefined;
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
      const url = new URL(req.url ?? "/", "http://x");
      const path = url.pathname;
      const query = url.searchParams;
      const idempotencyKey = req.headers["idempotency-key"] as string | undefined;
      const recorded: RecordedRequest = {
        method: req.method ?? "",
        path,
        authorization: req.headers.authorization,
        idempotencyKey,
        form,
        query,
      };
      requests.push(recorded);
      // A test's hook runs before the answer (something else happening meanwhile, as in a race).
      await hook?.(recorded);
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, {
          "Content-Type": "application/json",
          "Request-Id": `req_${randomBytes(6).toString("hex")}`,
        });
        res.end(JSON.stringify(body));
      };
      const failure = failures.shift();
      if (failure) return reply(failure, { error: { type: "api_error", message: "Injected failure" } });
      if (!req.headers.authorization?.startsWith("Bearer sk_")) {
        return reply(401, { error: { type: "invalid_request_error", message: "Invalid API Key provided" } });
      }
      if (req.method === "POST" && path === "/v1/customers") {
        const previous = idempotencyKey ? byIdempotencyKey.get(idempotencyKey) : undefined;
        if (previous) return reply(200, previous);
        const metadata: Record<string, string> = {};
        for (const [k, v] of form) {
          const m = /^metadata\[(.+)\]$/.exec(k);
          if (m?.[1]) metadata[m[1]] = v;
        }
        const customer = {
          id: `cus_${randomBytes(7).toString("hex")}`,
          object: "customer",
          name: form.get("name"),
          email: form.get("email"),
          metadata,
          invoice_settings: { default_payment_method: null } as Record<string, unknown>,
          default_source: null,
          created: Math.floor(Date.now() / 1000),
        } as Record<string, unknown> & { id: string };
        customers.set(customer.id, customer);
        if (idempotencyKey) byIdempotencyKey.set(idempotencyKey, customer);
        return reply(200, customer);
      }
      if (req.method === "POST" && path === "/v1/payment_intents") {
        const previous = idempotencyKey ? byIdempotencyKey.get(idempotencyKey) : undefined;
        if (previous) return reply(previous.status === "succeeded" ? 200 : 402, previous.reply);
        const customer = customers.get(form.get("customer") ?? "");
        const method = form.get("payment_method");
        const declined = !customer || !method || method === "pm_card_chargeDeclined";
        const intent = {
          id: `pi_${randomBytes(7).toString("hex")}`,
          object: "payment_intent",
          amount: Number(form.get("amount")),
          currency: form.get("currency"),
          customer: form.get("customer"),
          payment_method: method,
          description: form.get("description"),
          metadata: Object.fromEntries(
            [...form].flatMap(([k, v]) => {
              const m = /^metadata\[(.+)\]$/.exec(k);
              return m?.[1] ? [[m[1], v]] : [];
            }),
          ),
          status: declined ? "requires_payment_method" : "succeeded",
          created: Math.floor(Date.now() / 1000),
        };
        paymentIntents.push(intent);
        const body = declined
          ? {
              error: {
                type: "card_error",
                code: "card_declined",
                message: "Your card was declined.",
                payment_intent: intent,
              },
            }
          : intent;
        if (idempotencyKey) byIdempotencyKey.set(idempotencyKey, { status: intent.status, reply: body });
        return reply(declined ? 402 : 200, body);
      }
      const billing = billingRoute(req.method ?? "", path, form, query);
      if (billing) return reply(billing.status, billing.body);
      const del = /^\/v1\/customers\/([^/]+)$/.exec(path);
      if (req.method === "DELETE" && del?.[1]) {
        customers.delete(del[1]);
        return reply(200, { id: del[1], object: "customer", deleted: true });
      }
      const one = del?.[1] ? customers.get(del[1]) : undefined;
      if (del?.[1] && !one)
        return reply(404, {
          error: { type: "invalid_request_error", message: `No such customer: '${del[1]}'` },
        });
      if (req.method === "GET" && one) return reply(200, one);
      if (req.method === "POST" && one) {
        // The one update the service's tests make: invoice_settings[default_payment_method].
        const method = form.get("invoice_settings[default_payment_method]");
        if (method !== null) one.invoice_settings = { default_payment_method: method === "" ? null : method };
        return reply(200, one);
      }
      return reply(404, {
        error: {
          type: "invalid_request_error",
          message: `Unrecognized request URL (${req.method}: ${path})`,
        },
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;
  return {
    url: base,
    requests,
    customers,
    paymentIntents,
    checkoutSessions,
    portalSessions,
    subscriptions,
    setupIntents,
    invoices,
    completeCheckout,
    addInvoice,
    addSubscription,
    onRequest(next) {
      hook = next;
    },
    failNext(status) {
      failures = [...failures, status];
    },
    setDefaultPaymentMethod(customerId, paymentMethodId) {
      const customer = customers.get(customerId);
      if (!customer) throw new Error(`no customer ${customerId}`);
      customer.invoice_settings = { default_payment_method: paymentMethodId };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(7).toString("hex")}`;
}

/**
 * A form as Stripe's clients encode nested parameters (`metadata[clientId]`, `line_items[0][price]`):
 * objects, and arrays where every key is an index.
 */
export function nestedForm(form: URLSearchParams): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [key, value] of form) {
    const parts = key.split(/\[|\]\[|\]$/).filter((part, index) => index === 0 || part !== "");
    let node: Record<string, unknown> = root;
    for (const [index, part] of parts.entries()) {
      if (index === parts.length - 1) {
        node[part] = value;
        break;
      }
      node[part] ??= {};
      node = node[part] as Record<string, unknown>;
    }
  }
  const arrays = (node: unknown): unknown => {
    if (!node || typeof node !== "object") return node;
    const entries = Object.entries(node as Record<string, unknown>).map(([k, v]) => [k, arrays(v)] as const);
    const indexed = entries.length > 0 && entries.every(([k]) => /^\d+$/.test(k));
    return indexed
      ? entries.sort(([a], [b]) => Number(a) - Number(b)).map(([, v]) => v)
      : Object.fromEntries(entries);
  };
  return arrays(root) as Record<string, unknown>;
}

export interface PaymentsEnvironment {
  processor: PaymentProcessor;
  /** Closes the processor and takes the environment back (the service's caches reset). */
  stop(): Promise<void>;
}

/**
 * The processor on loopback and the environment that points the service at it, set before a
 * file's stack starts: `STRIPE_SECRET_KEY`, `STRIPE_API_BASE`, the webhook's signing secret when
 * given, and `env` (the tiers' prices); the configuration, the payment client and the webhook
 * secret read again. `stop` takes all of it back.
 */
export async function startPaymentsEnvironment(options: {
  secretKey: string;
  webhookSecret?: string;
  env?: Record<string, string>;
}): Promise<PaymentsEnvironment> {
  const reset = () => {
    resetConfig();
    resetPayments();
    resetWebhookSecret();
  };
  const processor = await startPaymentProcessor();
  const env: Record<string, string> = {
    STRIPE_SECRET_KEY: options.secretKey,
    STRIPE_API_BASE: processor.url,
    ...(options.webhookSecret ? { STRIPE_WEBHOOK_SECRET: options.webhookSecret } : {}),
    ...options.env,
  };
  Object.assign(process.env, env);
  reset();
  return {
    processor,
    async stop() {
      await processor.close();
      for (const name of Object.keys(env)) delete process.env[name];
      reset();
    },
  };
}
