/**
 * Secrets reflected by a target (issue 7) over real HTTP: a loopback target that echoes what it
 * received (method, URL, headers, body, as httpbin does; also in its response headers, as base64,
 * and padded so the echo crosses the body caps) behind a proxy with every target auth type and
 * every caller auth type. A `user`-role member reads the request-log detail and runs the
 * credential test and the token test; no form of any secret (the caller's, the target's, the
 * tokens the gateway fetched) may appear in what they get, while the echo itself, returned to the
 * data-plane caller unchanged, shows that the secrets did reach the target.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { SignJWT } from "jose";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { REQUEST_LOG_BODY_CAP_BYTES } from "#lib/data-plane/request-log.ts";
import { TEST_BODY_LIMIT } from "#lib/domain/credential-test.ts";
import { closeOutboundAgents } from "#lib/net/outbound.ts";
import { encodeBody } from "../support/content-codings.ts";
import { type BodyHandler, listenTokenEndpoint, listenWithBody } from "../support/loopback.ts";
import { Browser, type OAuthServer, serviceClient, startOAuthServer } from "../support/oauth-server.ts";
import { loggedDetail } from "../support/request-logs.ts";
import { expectNoSecret, formsOf } from "../support/secret-forms.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  joinClient,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const ISSUER = "https://issuer.echo.test";
const AUDIENCE = "echo-gateway";
const SERVICE_CLIENT = "echo-service";
const SERVICE_SECRET = `svc-${randomUUID()}-SECRET`;
const WEB_CLIENT = "echo-web";
const WEB_SECRET = `web-${randomUUID()}-SECRET`;

let stack: TestStack;
let owner: TestUser;
/** A plain `user`-role member of the client: reads the logs and runs the tests. */
let member: TestUser;
let clientId: string;
let oauth: OAuthServer;
let echoBase: string;
let tokenBase: string;
const servers: Server[] = [];
/** Tokens handed out by the customToken endpoint. */
const customTokens = new Set<string>();

const value = (label: string) => `${label}-${randomUUID()}`;
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

/** The echo as JSON: what the target received, and any padding before it. */
function echoOf(req: IncomingMessage, body: Buffer, padding: number) {
  return Buffer.from(
    `${"x".repeat(padding)}${JSON.stringify({
      method: req.method,
      url: req.url,
      headers: req.headers,
      body: body.toString("utf8"),
    })}`,
  );
}

function echo(req: IncomingMessage, body: Buffer, res: ServerResponse) {
  const url = new URL(req.url ?? "/", "http://echo");
  const padding = Number(url.searchParams.get("pad") ?? 0);
  // `enc`: the answer compressed with these codings, whatever the gateway asked for (issue 19).
  const codings = url.searchParams.get("enc");
  const echoed = echoOf(req, body, padding);
  const headers: Record<string, string> = {
    // The request's credential headers and URL echoed in response headers too.
    "x-echo-authorization": String(req.headers.authorization ?? ""),
    "x-echo-url": req.url ?? "",
    "x-echo-headers": b64(JSON.stringify(req.headers)),
    location: req.url ?? "/",
    ...(codings ? { "content-encoding": codings } : {}),
  };
  const send = (contentType: string, answer: Buffer | string) => {
    res.writeHead(200, { ...headers, "content-type": contentType });
    res.end(codings ? encodeBody(codings, answer) : answer);
  };
  if (url.pathname.endsWith("/base64")) send("text/plain", echoed.toString("base64"));
  else if (url.pathname.endsWith("/binary"))
    send("application/octet-stream", Buffer.concat([Buffer.from([0, 1, 2, 0xff]), echoed]));
  else send("application/json", echoed);
}

const listen = (handler: BodyHandler) => listenWithBody(handler, servers);

beforeAll(async () => {
  stack = await startTestStack();
  echoBase = await listen(echo);
  tokenBase = await listenTokenEndpoint(servers, customTokens);
  oauth = await startOAuthServer({
    clients: [
      serviceClient(SERVICE_CLIENT, SERVICE_SECRET, "api:read"),
      {
        client_id: WEB_CLIENT,
        client_secret: WEB_SECRET,
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        redirect_uris: [`${stack.baseUrl}/webhooks/oauth2`],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
  });
});
afterAll(async () => {
  await closeOutboundAgents();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await oauth?.close();
  await stack?.stop();
});
// A fresh owner, member and client per test: the basic plan allows 100 Core API calls a minute.
beforeEach(async () => {
  owner = await stack.newUser();
  member = await stack.newUser();
  clientId = await createClientFor(owner, "Echo Co");
  await joinClient(owner, clientId, member, "user");
});

const api = () => `/api/clients/${clientId}`;

// ---------------------------------------------------------------------------------------------
// The forms a secret must not be shown in
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// Credentials of every auth type
// ---------------------------------------------------------------------------------------------

interface Caller {
  authType: string;
  secret: Record<string, unknown>;
  /** Headers and query string that authenticate the caller. */
  present(): Promise<{ headers: Record<string, string>; query: string }>;
  /** Plaintext secrets of the caller's credential (and what it presents). */
  secrets: string[];
}

function callers(): Caller[] {
  const apiKey = value("caller-key");
  const queryKey = value("caller-query-key");
  const bearer = value("caller-bearer");
  const password = value("caller-password");
  const jwt = [b64url({ alg: "HS256" }), b64url({ sub: value("caller") }), b64url("sig")].join(".");
  const sharedSecret = `${value("shared")}-${value("secret")}`;
  return [
    {
      authType: "apiKey",
      secret: { keyName: "x-caller-key", keyValue: apiKey },
      present: async () => ({ headers: { "x-caller-key": apiKey }, query: "" }),
      secrets: [apiKey],
    },
    {
      authType: "apiKey",
      secret: { keyName: "ck", keyValue: queryKey, placement: "query" },
      present: async () => ({ headers: {}, query: `ck=${queryKey}` }),
      secrets: [queryKey],
    },
    {
      authType: "bearer",
      secret: { token: bearer },
      present: async () => ({ headers: { authorization: `Bearer ${bearer}` }, query: "" }),
      secrets: [bearer],
    },
    {
      authType: "basicAuth",
      secret: { username: "caller-user", password },
      present: async () => ({
        headers: { authorization: `Basic ${b64(`caller-user:${password}`)}` },
        query: "",
      }),
      secrets: [password, `caller-user:${password}`],
    },
    {
      authType: "jwt",
      secret: { token: jwt },
      present: async () => ({ headers: { authorization: jwt }, query: "" }),
      secrets: [jwt],
    },
    {
      authType: "jwtVerify",
      secret: { algorithms: ["HS256"], issuer: ISSUER, audience: AUDIENCE, subject: "svc-*", sharedSecret },
      present: async () => {
        const token = await new SignJWT({})
          .setProtectedHeader({ alg: "HS256" })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .setSubject("svc-echo")
          .setIssuedAt()
          .setExpirationTime("5m")
          .sign(new TextEncoder().encode(sharedSecret));
        return { headers: { authorization: `Bearer ${token}` }, query: "" };
      },
      secrets: [sharedSecret],
    },
  ];
}

function b64url(part: unknown): string {
  return Buffer.from(typeof part === "string" ? part : JSON.stringify(part)).toString("base64url");
}

interface Upstream {
  name: string;
  authType: string;
  secret: () => Record<string, unknown>;
  /** Static plaintext secrets (filled by `secret()`). */
  secrets: string[];
  /** Tokens fetched by the gateway for this credential (filled after the requests). */
  fetched: () => string[];
  /** Runs the live credential test (true) or the token test (false). */
  liveTest: boolean;
}

/** Additions every target credential carries: headers and query parameters echoed back. */
function additions(into: string[]) {
  const header = value("add-header");
  const query = value("add-query");
  into.push(header, query);
  return { additionalHeaders: { "X-Added-Secret": header }, additionalQueryParams: { added: query } };
}

function upstreams(): Upstream[] {
  const upstream = (
    name: string,
    authType: string,
    build: (secrets: string[]) => Record<string, unknown>,
    options: Partial<Pick<Upstream, "fetched" | "liveTest">> = {},
  ): Upstream => {
    const secrets: string[] = [];
    return {
      name,
      authType,
      secrets,
      secret: () => build(secrets),
      fetched: options.fetched ?? (() => []),
      liveTest: options.liveTest ?? true,
    };
  };
  const keep = (into: string[], ...values: string[]) => {
    into.push(...values);
    return values[0]!;
  };
  return [
    upstream("apiKey in a header", "apiKey", (s) => ({
      keyName: "X-Target-Key",
      keyValue: keep(s, value("target-key")),
      prefix: "Key",
      ...additions(s),
    })),
    upstream("apiKey in the query", "apiKey", (s) => ({
      keyName: "tk",
      keyValue: keep(s, `${value("target-query-key")}/+ =`),
      placement: "query",
      ...additions(s),
    })),
    upstream("bearer", "bearer", (s) => ({ token: keep(s, value("target-bearer")), ...additions(s) })),
    upstream("jwt", "jwt", (s) => ({
      token: keep(s, [b64url({ alg: "RS256" }), b64url({ sub: value("target") }), b64url("sig")].join(".")),
      ...additions(s),
    })),
    upstream("basicAuth", "basicAuth", (s) => {
      const password = keep(s, value("target-password"));
      s.push(`target-user:${password}`);
      return { username: "target-user", password, ...additions(s) };
    }),
    upstream("custom", "custom", (s) => ({
      ...additions(s),
      data: { account: keep(s, value("data-account")), nested: { pin: keep(s, value("data-pin")) } },
    })),
    upstream("none (additions only)", "none", (s) => additions(s)),
    upstream(
      "customToken in a header",
      "customToken",
      (s) => ({
        tokenUrl: `${tokenBase}/token`,
        tokenPath: "data.token",
        requestHeaders: { "X-Login": keep(s, value("token-login")) },
        keyName: "X-Fetched",
        additionalData: { tenant: keep(s, value("additional-data")) },
        ...additions(s),
      }),
      { fetched: () => [...customTokens], liveTest: false },
    ),
    upstream(
      "customToken in the query",
      "customToken",
      (s) => ({
        tokenUrl: `${tokenBase}/token`,
        method: "GET",
        tokenPath: "data.token",
        placement: "query",
        keyName: "token",
        ...additions(s),
      }),
      { fetched: () => [...customTokens], liveTest: false },
    ),
    upstream(
      "oauth2 client_credentials",
      "oauth2",
      (s) => ({
        flow: "client_credentials",
        tokenUrl: oauth.tokenUrl,
        clientId: SERVICE_CLIENT,
        clientSecret: keep(s, SERVICE_SECRET),
        scope: "api:read",
        ...additions(s),
      }),
      { fetched: () => [...oauth.issued], liveTest: false },
    ),
  ];
}

async function createCredential(credentialType: "proxy" | "target", authType: string, secret: unknown) {
  return created(
    owner.api.post(`${api()}/credentials`, {
      credentialName: `${credentialType} ${authType}`,
      credentialType,
      authType,
      region: US,
      secret,
    }),
    "credentials",
  );
}

async function proxyWith(proxyCredentialId: string, targetCredentialId: string, targetId: string) {
  const proxy = await created(
    owner.api.post(`${api()}/proxies`, {
      proxyName: "echo",
      proxyRegion: US,
      proxyProxyCredentialId: proxyCredentialId,
      proxyTargetId: targetId,
      proxyTargetCredentialId: targetCredentialId,
    }),
    "proxies",
  );
  return { proxyId: proxy.proxyId as string, url: `${stack.regions[US]}/api/${proxy.proxyId}` };
}

async function echoTarget(): Promise<string> {
  const target = await created(
    owner.api.post(`${api()}/targets`, {
      targetName: "echo",
      targetRegion: US,
      targetBaseURL: `${echoBase}/echo`,
      targetTestPath: "/test",
    }),
    "targets",
  );
  return target.targetId as string;
}

/** One POST through the proxy (the caller's secret in the body too); the log detail as the member sees it. */
async function throughProxy(url: string, caller: Caller, path: string, extraQuery = "") {
  const { headers, query } = await caller.present();
  const search = [query, extraQuery].filter(Boolean).join("&");
  const response = await callDataPlane(`${url}${path}${search ? `?${search}` : ""}`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ note: "the caller's own secret, in the body", echo: caller.secrets[0] }),
  });
  expect(response.status, response.text).toBe(200);
  const requestId = response.headers.get("x-request-id");
  expect(requestId).toEqual(expect.any(String));
  return { response, requestId: requestId! };
}

const logDetail = async (proxyId: string, requestId: string) => ({
  requests: [await loggedDetail(member.api, clientId, proxyId, requestId)],
});

// ---------------------------------------------------------------------------------------------

describe("an echoing target behind a proxy: the request log shows no secret", () => {
  const callerList = callers();
  const upstreamList = upstreams();
  it.each(
    upstreamList.map((upstream, i) => [upstream.name, upstream, callerList[i % callerList.length]!] as const),
  )("target %s", async (_name, upstream, caller) => {
    const [proxyCredential, targetCredential, targetId] = await Promise.all([
      createCredential("proxy", caller.authType, caller.secret),
      createCredential("target", upstream.authType, upstream.secret()),
      echoTarget(),
    ]);
    const proxy = await proxyWith(proxyCredential.credentialId, targetCredential.credentialId, targetId);

    // Plain JSON echo, echo as base64 text, binary echo (stored as base64), and echoes padded so
    // that the secrets cross the 32 KiB cap of the stored body.
    const paths = [
      ["/json", ""],
      ["/base64", ""],
      ["/binary", ""],
      ["/json", `pad=${REQUEST_LOG_BODY_CAP_BYTES - 200}`],
      ["/json", `pad=${REQUEST_LOG_BODY_CAP_BYTES - 400}`],
      // Compressed echoes: the log is redacted on the decoded body.
      ["/json", "enc=gzip"],
      ["/json", "enc=deflate,%20br"],
      ["/json", "enc=zstd"],
      ["/base64", "enc=br"],
    ] as const;
    for (const [path, extraQuery] of paths) {
      const { response, requestId } = await throughProxy(proxy.url, caller, path, extraQuery);
      const secrets = [...caller.secrets, ...upstream.secrets, ...upstream.fetched()];
      if (path === "/json" && !extraQuery) {
        // The caller gets the target's answer unchanged: the target did see the secrets.
        const echoed = response.text;
        const shows = (secret: string) =>
          formsOf(secret).some((form) => form !== secret.slice(0, 12) && echoed.includes(form));
        expect(upstream.secrets.filter(shows).length, echoed).toBeGreaterThanOrEqual(2);
        expect(shows(caller.secrets[0]!), echoed).toBe(true);
        if (upstream.fetched().length > 0) expect(upstream.fetched().some(shows), echoed).toBe(true);
      }
      const detail = await logDetail(proxy.proxyId, requestId);
      const record = detail.requests[0];
      expect(record.responseBody, path).toEqual(expect.any(String));
      expect(record.responseBody).toContain(path === "/binary" ? "" : "[redacted]");
      expectNoSecret(`request log of ${path}?${extraQuery}`, detail, secrets);
      // The list (without bodies) too.
    }
    const list = await member.api.get(`${api()}/proxies/${proxy.proxyId}/requests`);
    expect(list.status).toBe(200);
    expectNoSecret("request log list", list.body, [
      ...caller.secrets,
      ...upstream.secrets,
      ...upstream.fetched(),
    ]);
  });

  it("target oauth2 authorization_code: the stored and refreshed tokens and the client secret", async () => {
    const caller = callerList[0]!;
    const credential = await createCredential("target", "oauth2", {
      flow: "authorization_code",
      tokenUrl: oauth.tokenUrl,
      authorizationUrl: `${oauth.authorizationUrl}?prompt=consent`,
      clientId: WEB_CLIENT,
      clientSecret: WEB_SECRET,
      scope: "openid offline_access",
    });
    const redirect = await new Browser().authorize(credential.authorizationUrl);
    const callback = await fetch(redirect, { redirect: "manual" });
    expect(callback.status, await callback.text()).toBe(200);
    const [proxyCredential, targetId] = await Promise.all([
      createCredential("proxy", caller.authType, caller.secret),
      echoTarget(),
    ]);
    const proxy = await proxyWith(proxyCredential.credentialId, credential.credentialId, targetId);
    const { response, requestId } = await throughProxy(proxy.url, caller, "/json");
    const sent = JSON.parse(response.text).headers.authorization as string;
    expect(oauth.issued.has(sent.replace(/^Bearer /, ""))).toBe(true);
    const detail = await logDetail(proxy.proxyId, requestId);
    expect(detail.requests[0].responseBody).toContain("[redacted]");
    expectNoSecret("request log (authorization_code)", detail, [
      WEB_SECRET,
      ...oauth.issued,
      ...caller.secrets,
    ]);
  });
});

describe("an echoing target in the credential test and the token test", () => {
  const upstreamList = upstreams();
  it.each(upstreamList.map((upstream) => [upstream.name, upstream] as const))(
    "target %s, tested by a user-role member",
    async (_name, upstream) => {
      const [credential, targetId] = await Promise.all([
        createCredential("target", upstream.authType, upstream.secret()),
        echoTarget(),
      ]);
      const run = (body: Record<string, unknown>) =>
        member.api.post(
          `${api()}/credentials/${credential.credentialId}/${upstream.liveTest ? "test" : "token-test"}`,
          body,
        );
      if (!upstream.liveTest) {
        const response = await run({});
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        expectNoSecret("token test", response.body, [...upstream.secrets, ...upstream.fetched()]);
        return;
      }
      const bodies = [
        { targetId, method: "POST", body: { hello: "world" } },
        { targetId, path: "/base64" },
        { targetId, path: "/binary" },
        // Compressed echoes, decoded before they are redacted and shown.
        { targetId, path: "/json?enc=gzip" },
        { targetId, path: "/json?enc=zstd" },
        // The secrets cross the 64 KiB cut of the shown body.
        { targetId, path: `/json?pad=${TEST_BODY_LIMIT - 150}` },
        { targetId, path: `/json?pad=${TEST_BODY_LIMIT - 300}` },
        { targetId, path: `/json?pad=${TEST_BODY_LIMIT - 600}` },
      ];
      for (const body of bodies) {
        const response = await run(body);
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        const result = response.body.tests[0];
        expect(JSON.stringify(result)).toContain("[redacted]");
        expectNoSecret(`credential test ${JSON.stringify(body)}`, response.body, upstream.secrets);
      }
    },
  );
});
