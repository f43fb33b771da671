/**
 * A payment-processor API on loopback that speaks the part of Stripe's REST API the service uses
 * (customers: create, retrieve, update of the default payment method, delete; payment intents:
 * create and confirm), so the real `stripe` package is exercised over real HTTP. It records every
 * request, honours idempotency keys as Stripe does, and can be told to fail. A customer whose
 * default payment method is `pm_card_chargeDeclined` is declined (402 card_error), as Stripe's
 * test card of that name.
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  idempotencyKey: string | undefined;
  form: URLSearchParams;
}

export interface PaymentProcessor {
  url: string;
  requests: RecordedRequest[];
  customers: Map<string, Record<string, unknown>>;
  /** Every PaymentIntent created (an idempotent replay is not a new one), succeeded or declined. */
  paymentIntents: Record<string, unknown>[];
  failNext(status: number): void;
  /** Set (or, with null, clear) a customer's default payment method, as the dashboard would. */
  setDefaultPaymentMethod(customerId: string, paymentMethodId: string | null): void;
  close(): Promise<void>;
}

export async function startPaymentProcessor(): Promise<PaymentProcessor> {
  const requests: RecordedRequest[] = [];
  const customers = new Map<string, Record<string, unknown>>();
  const paymentIntents: Record<string, unknown>[] = [];
  const byIdempotencyKey = new Map<string, Record<string, unknown>>();
  let failures: number[] = [];

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
      const path = new URL(req.url ?? "/", "http://x").pathname;
      const idempotencyKey = req.headers["idempotency-key"] as string | undefined;
      requests.push({
        method: req.method ?? "",
        path,
        authorization: req.headers.authorization,
        idempotencyKey,
        form,
      });
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
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    customers,
    paymentIntents,
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
