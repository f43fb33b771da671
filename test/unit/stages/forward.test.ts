/**
 * Stage forward (lib/data-plane/stages/forward.ts): the outgoing request as built from the
 * caller's, and forward() with the target call, the single-use claim and the token injected.
 */
import { describe, expect, it } from "vitest";
import { authenticateCaller } from "#lib/data-plane/caller-auth.ts";
import { isAnswer } from "#lib/data-plane/context.ts";
import { admit } from "#lib/data-plane/stages/admit.ts";
import type { SingleUseClaims } from "#lib/data-plane/stages/claim.ts";
import {
  type ForwardDeps,
  forward,
  MAX_RESPONSE_BYTES,
  outgoingRequest,
} from "#lib/data-plane/stages/forward.ts";
import { clientAddressHeaders, isClientAddressHeader } from "#lib/net/header-rules.ts";
import {
  OutboundBlockedError,
  OutboundConnectError,
  type OutboundRequest,
  type OutboundResponse,
  OutboundTimeoutError,
} from "#lib/net/outbound.ts";
import type { OutgoingRequest } from "#lib/vault/apply-credential.ts";
import {
  CALLER_KEY,
  callerCredential,
  credential,
  located,
  NOW,
  PROXY_ID,
  type RuntimeOptions,
  runtime,
  TARGET_TOKEN,
} from "./fixtures.ts";

async function admitted(options: RuntimeOptions = {}, overrides: Parameters<typeof located>[1] = {}) {
  const ctx = located(runtime(options), overrides);
  const result = await admit(ctx, authenticateCaller);
  if (isAnswer(result)) throw new Error(`not admitted: ${result.outcome.message}`);
  return result;
}

const headers = (extra: Record<string, string>) => ({ "x-api-key": CALLER_KEY, ...extra });

describe("client-address headers", () => {
  it("are recognised whatever their case, X-Forwarded-* included", () => {
    for (const name of [
      "Forwarded",
      "X-Real-IP",
      "true-client-ip",
      "X-Forwarded-Proto",
      "CLIENT-IP",
      "fastly-client-ip",
    ])
      expect(isClientAddressHeader(name), name).toBe(true);
    for (const name of ["x-forwarded", "x-real-ip-2", "accept", "x-client"])
      expect(isClientAddressHeader(name), name).toBe(false);
  });

  it("are set from the real address; an IPv6 node is bracketed and quoted in Forwarded (RFC 7239)", () => {
    expect(clientAddressHeaders("2001:db8::1")).toEqual({
      "x-forwarded-for": "2001:db8::1",
      "x-real-ip": "2001:db8::1",
      forwarded: 'for="[2001:db8::1]"',
    });
  });
});

describe("outgoingRequest", () => {
  it("drops hop-by-hop headers, the caller's credential and client-address headers; sets X-Forwarded-For, X-Real-IP and Forwarded", async () => {
    const ctx = await admitted(
      {},
      {
        headers: headers({
          host: "gateway.example",
          connection: "keep-alive",
          "keep-alive": "timeout=5",
          "transfer-encoding": "chunked",
          te: "trailers",
          trailer: "x",
          upgrade: "websocket",
          expect: "100-continue",
          "content-length": "0",
          "proxy-authorization": "Basic abc",
          "proxy-connection": "keep-alive",
          authorization: "Bearer the-callers-own",
          "x-forwarded-for": "10.0.0.1",
          "x-forwarded-host": "spoofed",
          forwarded: "for=10.0.0.1",
          "x-real-ip": "10.0.0.2",
          "true-client-ip": "10.0.0.3",
          "CF-Connecting-IP": "10.0.0.4",
          accept: "application/json",
          "x-custom": "kept",
        }),
      },
    );
    const built = outgoingRequest(ctx) as OutgoingRequest;
    expect({ ...built.headers }).toEqual({
      accept: "application/json",
      "x-custom": "kept",
      // Every client-address header from the real address, none of the caller's.
      "x-forwarded-for": "203.0.113.7",
      "x-real-ip": "203.0.113.7",
      forwarded: "for=203.0.113.7",
    });
    expect(built.method).toBe("GET");
    expect(built.url.href).toBe("https://target.example/v1/items/42");
    expect(built.body).toBeUndefined();
  });

  it("keeps the query as sent except the caller's credential parameter; adds the proxy's additions", async () => {
    const queryKey = credential("cred-caller", "proxy", "apiKey", {
      keyName: "key",
      keyValue: CALLER_KEY,
      placement: "query",
    });
    const ctx = await admitted(
      {
        proxyCredential: queryKey,
        proxy: {
          proxyAdditionalHeaders: { "x-tenant": "t-1" },
          proxyAdditionalQueryParams: { region: "eu" },
          proxyAdditionalData: { tenant: "t-1" },
        },
        target: { targetBaseURL: "https://target.example/base/" },
      },
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        rawQuery: `q=a%20b&key=${CALLER_KEY}&q=2`,
        body: Buffer.from('{"name":"x"}'),
      },
    );
    const built = outgoingRequest(ctx) as OutgoingRequest;
    expect(built.url.origin + built.url.pathname).toBe("https://target.example/base/items/42");
    expect([...built.url.searchParams]).toEqual([
      ["q", "a b"],
      ["q", "2"],
      ["region", "eu"],
    ]);
    expect(built.headers["x-tenant"]).toBe("t-1");
    expect(JSON.parse(built.body!.toString())).toEqual({ name: "x", tenant: "t-1" });
  });

  it("an invalid target URL is a 502 configuration error", async () => {
    const ctx = await admitted({ target: { targetBaseURL: "not a url" } });
    const answer = outgoingRequest(ctx);
    expect("response" in answer && answer.response.status).toBe(502);
    expect(ctx.validation.requestConfigError).toBe(true);
  });
});

const OK: OutboundResponse = {
  status: 200,
  headers: { "content-type": "application/json" },
  body: Buffer.from('{"ok":true}'),
  truncated: false,
  timings: { startedAt: NOW, headersAt: NOW + 4, endedAt: NOW + 5 },
  url: "https://target.example/v1/items/42",
};

function deps(send: (request: OutboundRequest) => Promise<OutboundResponse>, claimGranted = true) {
  const sent: OutboundRequest[] = [];
  const claims: string[] = [];
  const fakeClaims: SingleUseClaims = {
    claim: async (clientId, credentialId) => {
      claims.push(`claim ${clientId}/${credentialId}`);
      return claimGranted;
    },
    release: async () => {
      claims.push("release");
    },
    consume: async () => {
      claims.push("consume");
    },
  };
  const forwardDeps: ForwardDeps = {
    claims: fakeClaims,
    send: async (request) => {
      sent.push(request);
      return send(request);
    },
    dynamicToken: async () => undefined,
    now: () => NOW,
  };
  return { sent, claims, deps: forwardDeps };
}

const summary = (answer: Awaited<ReturnType<typeof forward>>) => ({
  status: answer.response.status,
  code: answer.outcome.code,
  message: answer.outcome.message,
});

describe("forward", () => {
  it("success: the target's answer, its trace, and the checks passed", async () => {
    const ctx = await admitted({}, { headers: headers({ accept: "*/*" }) });
    const { sent, deps: d } = deps(async () => ({
      ...OK,
      headers: {
        ...OK.headers,
        connection: "close",
        "service-proxy-code": "forged",
        "set-cookie": ["sid=1; Path=/; Domain=evil.example", "__Host-x=1; Path=/; Secure"],
      },
    }));
    const answer = await forward(ctx, d);
    expect(answer.response.status).toBe(200);
    expect(answer.response.body.toString()).toBe('{"ok":true}');
    expect(answer.response.headers).toEqual({ "content-type": "application/json" });
    expect(answer.response.cookies).toEqual([`sid=1; Path=/api/${PROXY_ID}`]);
    expect(answer.outcome).toEqual({
      code: "proxy-access-granted",
      message: "Request forwarded to the target",
      warning: "__Host- cookies of the target were dropped: __Host-x",
    });
    // The call: the target credential applied, the 30 s default timeout, one byte over the cap read.
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      method: "GET",
      timeoutMs: 30_000,
      maxResponseBytes: MAX_RESPONSE_BYTES + 1,
    });
    expect(String(sent[0]!.url)).toBe("https://target.example/v1/items/42");
    expect(sent[0]!.headers).toMatchObject({ authorization: `Bearer ${TARGET_TOKEN}`, accept: "*/*" });
    expect(sent[0]!.headers?.["x-api-key"]).toBeUndefined();
    expect(ctx.processed).toBe(true);
    expect(ctx.target).toMatchObject({ sentAt: NOW, receivedAt: NOW + 5, status: 200, location: null });
    expect(ctx.validation).toMatchObject({ requestValid: true, requestSent: true, responseReceived: true });
    expect(ctx.claim).toBeUndefined();
  });

  it("the target's 401/403 is passed on with a warning about the target credential", async () => {
    const ctx = await admitted();
    const answer = await forward(ctx, deps(async () => ({ ...OK, status: 403 })).deps);
    expect(answer.response.status).toBe(403);
    expect(answer.outcome.warning).toBe("The target refused the request: check the target credential");
    expect(ctx.processed).toBe(true);
  });

  it("the proxy's timeout (capped at 60 s) passed to the call; a timeout is 504", async () => {
    const ctx = await admitted({ proxy: { proxyTimeoutSeconds: 90 } });
    const { sent, deps: d } = deps(async () => {
      throw new OutboundTimeoutError("target.example", 60_000);
    });
    expect(summary(await forward(ctx, d))).toEqual({
      status: 504,
      code: "proxy-access-granted",
      message: "The target did not answer within 60 s",
    });
    expect(sent[0]?.timeoutMs).toBe(60_000);
    expect(ctx.validation).toMatchObject({ requestSent: true });
    expect(ctx.validation.responseReceived).toBeUndefined();
    expect(ctx.processed).toBe(false);
  });

  it("a blocked address is a 502 configuration error, not sent", async () => {
    const ctx = await admitted();
    const answer = await forward(
      ctx,
      deps(async () => {
        throw new OutboundBlockedError("link-local address", "169.254.169.254");
      }).deps,
    );
    expect(summary(answer)).toEqual({
      status: 502,
      code: "proxy-access-granted",
      message: "The target address is not allowed",
    });
    expect(ctx.validation).toMatchObject({ requestSent: false, requestConfigError: true });
  });

  it("an unreachable target is a 502", async () => {
    const ctx = await admitted();
    const answer = await forward(
      ctx,
      deps(async () => {
        throw new OutboundConnectError("target.example", "ECONNREFUSED");
      }).deps,
    );
    expect(summary(answer)).toEqual({
      status: 502,
      code: "proxy-access-granted",
      message: "The target could not be reached",
    });
    expect(ctx.validation.requestConfigError).toBeUndefined();
  });

  it("any other failure of the call is thrown to the pipeline (a logged 500)", async () => {
    const ctx = await admitted();
    const failure = new TypeError("bug");
    await expect(
      forward(
        ctx,
        deps(async () => {
          throw failure;
        }).deps,
      ),
    ).rejects.toBe(failure);
  });

  it("a response above 6 MB (or cut at the cap) is 413 response-too-large, its body not kept", async () => {
    for (const response of [
      { ...OK, body: Buffer.alloc(MAX_RESPONSE_BYTES + 1) },
      { ...OK, body: Buffer.alloc(10), truncated: true },
    ]) {
      const ctx = await admitted();
      const answer = await forward(ctx, deps(async () => response).deps);
      expect(summary(answer)).toEqual({
        status: 413,
        code: "response-too-large",
        message: "The target's response exceeds 6 MB",
      });
      expect(ctx.target?.status).toBe(200);
      expect(ctx.target?.body).toBeUndefined();
      expect(ctx.processed).toBe(false);
    }
    // Exactly 6 MB passes.
    const ctx = await admitted();
    const exact = await forward(
      ctx,
      deps(async () => ({ ...OK, body: Buffer.alloc(MAX_RESPONSE_BYTES) })).deps,
    );
    expect(exact.response.status).toBe(200);
  });

  it("a single-use credential: claimed before the call; refused claim is 403 and the target is not called", async () => {
    const singleUse = { proxyCredential: callerCredential({ singleUse: true }) };
    const granted = await admitted(singleUse);
    const first = deps(async () => OK);
    expect((await forward(granted, first.deps)).response.status).toBe(200);
    expect(first.claims).toEqual(["claim client-1/cred-caller"]);
    expect(granted.claim).toEqual({ clientId: "client-1", credentialId: "cred-caller" });

    const used = await admitted(singleUse);
    const second = deps(async () => OK, false);
    expect(summary(await forward(used, second.deps))).toEqual({
      status: 403,
      code: "proxy-access-denied",
      message: "The single-use proxy credential was already used",
    });
    expect(second.sent).toHaveLength(0);
    expect(used.claim).toBeUndefined(); // nothing for the pipeline to release
    expect(used.validation.proxyAuthenticated).toBe(false);
  });

  it("a target token that cannot be fetched is a 502 configuration error, the target not called", async () => {
    const ctx = await admitted();
    const { sent, deps: d } = deps(async () => OK);
    d.dynamicToken = async () => {
      throw new Error("token endpoint down");
    };
    expect(summary(await forward(ctx, d))).toEqual({
      status: 502,
      code: "proxy-access-granted",
      message: "The target credential could not be applied (token endpoint failed)",
    });
    expect(sent).toHaveLength(0);
    expect(ctx.validation.requestConfigError).toBe(true);
  });

  it("a fetched token is applied and kept for redaction", async () => {
    const ctx = await admitted({ targetCredential: credential("cred-target", "target", "oauth2", {}) });
    const { sent, deps: d } = deps(async () => OK);
    d.dynamicToken = async () => "fetched-token-123";
    await forward(ctx, d);
    expect(sent[0]?.headers?.authorization).toBe("Bearer fetched-token-123");
    expect(ctx.dynamicToken).toBe("fetched-token-123");
  });
});
