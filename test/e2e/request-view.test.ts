/**
 * The view of the caller's request (issue 19, lib/domain/request-view.ts) over real HTTP against
 * the local stack, the emulator and a real loopback target:
 *
 * - repeated query parameters, repeated header lines (joined with commas on the way in) and JSON
 *   arrays at a body path are tested value by value: a deny rule refuses when any value matches,
 *   an allow rule applies only when every value does, meters and transforms err on applying;
 * - the path is matched and forwarded normalised (RFC 3986 6.2.2): `/%61dmin` is `/admin`;
 * - the caller's credential never reaches a transform's variables or request, nor a meter's
 *   predicates, for every caller auth type a proxy credential supports.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { base64url, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeOutboundAgents } from "#lib/net/outbound.ts";
import { loggedDetail } from "../support/request-logs.ts";
import {
  createClientFor,
  created,
  createProxyOf,
  createProxyParts,
  type ProxyParts,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const REGION = "us-east-1";
const KEY = `view-key-${randomUUID()}`;

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let target: Server;
let targetBase: string;
let parts: ProxyParts;
/** What the target received, newest last. */
const received: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  target = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      received.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  stack = await startTestStack();
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Request View Co");
  parts = await createProxyParts(owner, clientId, {
    region: REGION,
    key: KEY,
    targetBaseURL: `${targetBase}/base`,
  });
});
afterAll(async () => {
  await stack?.stop();
  await closeOutboundAgents();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
});

const api = () => `/api/clients/${clientId}`;

async function newProxy(extra: Record<string, unknown> = {}, of: ProxyParts = parts): Promise<string> {
  if (Object.keys(extra).length === 0) return createProxyOf(owner, clientId, REGION, of);
  const proxy = await created(
    owner.api.post(`${api()}/proxies`, {
      proxyName: `p-${randomUUID().slice(0, 8)}`,
      proxyRegion: REGION,
      proxyProxyCredentialId: of.proxyCredentialId,
      proxyTargetId: of.targetId,
      proxyTargetCredentialId: of.targetCredentialId,
      ...extra,
    }),
    "proxies",
  );
  return proxy.proxyId as string;
}

async function newRule(proxyId: string, rule: Record<string, unknown>): Promise<void> {
  const answer = await owner.api.post(`${api()}/proxies/${proxyId}/rules`, rule);
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
}

async function newMeter(proxyId: string, meter: Record<string, unknown>): Promise<void> {
  await created(
    owner.api.post(`${api()}/proxies/${proxyId}/meters`, {
      meterType: "request_count",
      meterActive: true,
      ...meter,
    }),
    "meters",
  );
}

async function newRequestTransform(proxyId: string, transform: Record<string, unknown>): Promise<void> {
  await created(
    owner.api.post(`${api()}/proxies/${proxyId}/request-transforms`, {
      transformMode: "all",
      transformActive: true,
      ...transform,
    }),
    "requestTransforms",
  );
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * A request sent as written: the path untouched (fetch would resolve `%2e%2e` segments) and each
 * header a line of its own, in order (a name given twice is sent on two lines).
 */
function send(
  proxyId: string,
  path: string,
  options: { method?: string; headers?: [string, string][]; body?: string; key?: boolean } = {},
): Promise<Answer> {
  const url = new URL(stack.regions[REGION]!);
  // Given as an array, the headers are sent as they are: the Host line too.
  const headers: string[] = ["host", url.host];
  for (const [name, value] of [
    ...(options.key === false ? [] : ([["x-api-key", KEY]] as [string, string][])),
    ...(options.headers ?? []),
  ])
    headers.push(name, value);
  if (options.body !== undefined) headers.push("content-length", String(Buffer.byteLength(options.body)));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: options.method ?? "GET",
        path: `/api/${proxyId}${path}`,
        headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString(),
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** The status of a request, and whether the target was reached. */
async function outcome(proxyId: string, path: string, options: Parameters<typeof send>[2] = {}) {
  const before = received.length;
  const answer = await send(proxyId, path, options);
  return { status: answer.status, reached: received.length > before, answer };
}

describe("several values of a field", () => {
  it("a deny rule on a query parameter refuses ?role=user&role=admin in either order; the target is not reached", async () => {
    const proxyId = await newProxy();
    await newRule(proxyId, {
      effect: "deny",
      priority: 10,
      queryChecks: [{ name: "role", pattern: "^admin$" }],
    });
    for (const query of ["?role=user&role=admin", "?role=admin&role=user", "?role=admin"]) {
      const result = await outcome(proxyId, `/items${query}`);
      expect(result.status, query).toBe(403);
      expect(result.reached, query).toBe(false);
      expect(result.answer.headers["service-proxy-message"]).toContain("Access denied by an access rule");
    }
    const allowed = await outcome(proxyId, "/items?role=user&role=guest");
    expect(allowed).toMatchObject({ status: 200, reached: true });
    expect(received.at(-1)!.url).toBe("/base/items?role=user&role=guest");
  });

  it("a deny rule on a header refuses two header lines in either order and a comma-joined line", async () => {
    const proxyId = await newProxy();
    await newRule(proxyId, {
      effect: "deny",
      priority: 10,
      headerChecks: [{ name: "X-Role", pattern: "^admin$" }],
    });
    const refused: [string, string][][] = [
      [
        ["x-role", "user"],
        ["x-role", "admin"],
      ],
      [
        ["x-role", "admin"],
        ["x-role", "user"],
      ],
      [["x-role", "user,admin"]],
      [["x-role", "admin, user"]],
    ];
    for (const headers of refused) {
      const result = await outcome(proxyId, "/items", { headers });
      expect(result.status, JSON.stringify(headers)).toBe(403);
      expect(result.reached, JSON.stringify(headers)).toBe(false);
    }
    expect(await outcome(proxyId, "/items", { headers: [["x-role", "user, guest"]] })).toMatchObject({
      status: 200,
      reached: true,
    });
  });

  it("an allow rule applies only when every value matches; a header value with commas still matches whole", async () => {
    const proxyId = await newProxy({ proxyDefaultRuleEffect: "deny" });
    await newRule(proxyId, {
      effect: "allow",
      priority: 10,
      queryChecks: [{ name: "role", pattern: "^user$" }],
      headerChecks: [{ name: "x-agent", pattern: "^app \\(v1, beta\\)$" }],
    });
    const agent: [string, string] = ["x-agent", "app (v1, beta)"];
    expect(await outcome(proxyId, "/items?role=user", { headers: [agent] })).toMatchObject({
      status: 200,
      reached: true,
    });
    expect(await outcome(proxyId, "/items?role=user&role=user", { headers: [agent] })).toMatchObject({
      status: 200,
    });
    for (const query of ["?role=user&role=admin", "?role=admin&role=user"]) {
      const result = await outcome(proxyId, `/items${query}`, { headers: [agent] });
      expect(result, query).toMatchObject({ status: 403, reached: false });
    }
    const twoAgents = await outcome(proxyId, "/items?role=user", { headers: [agent, ["x-agent", "curl"]] });
    expect(twoAgents).toMatchObject({ status: 403, reached: false });
  });

  it("a meter counts a request whose header or body array holds the matching value among others", async () => {
    const byHeader = await newProxy();
    await newMeter(byHeader, {
      meterMode: "conditional",
      effect: "include",
      headers: [{ name: "x-role", pattern: "^admin$", presence: "present" }],
      limits: { hour: 1 },
    });
    const first = await outcome(byHeader, "/m", {
      headers: [
        ["x-role", "user"],
        ["x-role", "admin"],
      ],
    });
    expect(first.status).toBe(200);
    const second = await outcome(byHeader, "/m", { headers: [["x-role", "admin,user"]] });
    expect(second).toMatchObject({ status: 429, reached: false });
    // Without the value the meter does not apply.
    expect((await outcome(byHeader, "/m", { headers: [["x-role", "user"]] })).status).toBe(200);

    const byBody = await newProxy();
    await newMeter(byBody, {
      meterMode: "conditional",
      effect: "include",
      body: [{ path: "roles", pattern: "^admin$", presence: "present" }],
      limits: { hour: 1 },
    });
    const post = (roles: string[]) =>
      outcome(byBody, "/m", {
        method: "POST",
        headers: [["content-type", "application/json"]],
        body: JSON.stringify({ roles }),
      });
    expect((await post(["user", "admin"])).status).toBe(200);
    expect(await post(["admin", "user"])).toMatchObject({ status: 429, reached: false });
    expect((await post(["user"])).status).toBe(200);
  });

  it("an exclude transform is left out only when every value matches", async () => {
    const proxyId = await newProxy();
    await newRequestTransform(proxyId, {
      transformMode: "conditional",
      effect: "exclude",
      query: [{ name: "role", pattern: "^user$", presence: "present" }],
      code: 'export default (context, request) => ({ ...request, headers: { ...request.headers, "x-ran": "yes" } })',
    });
    for (const query of ["?role=user&role=admin", "?role=admin&role=user"]) {
      expect((await outcome(proxyId, `/t${query}`)).status, query).toBe(200);
      expect(received.at(-1)!.headers["x-ran"], query).toBe("yes");
    }
    expect((await outcome(proxyId, "/t?role=user")).status).toBe(200);
    expect(received.at(-1)!.headers["x-ran"]).toBeUndefined();
  });
});

describe("the path, normalised", () => {
  it("a deny rule on ^/admin refuses /%61dmin; with flag i /%41dmin; the target is not reached", async () => {
    const proxyId = await newProxy();
    await newRule(proxyId, {
      effect: "deny",
      priority: 10,
      path: { pattern: "^/admin", presence: "present" },
    });
    for (const path of ["/admin/x", "/%61dmin/x", "/%61%64%6D%69%6E"]) {
      const result = await outcome(proxyId, path);
      expect(result, path).toMatchObject({ status: 403, reached: false });
    }
    // Case-sensitive without a flag: /ADMIN is another path.
    expect(await outcome(proxyId, "/%41dmin")).toMatchObject({ status: 200, reached: true });
    expect(received.at(-1)!.url).toBe("/base/Admin");

    const folded = await newProxy();
    await newRule(folded, {
      effect: "deny",
      priority: 10,
      path: { pattern: "^/admin", presence: "present" },
      regexFlags: "i",
    });
    for (const path of ["/%41dmin", "/ADMIN", "/%41%44MIN/x"]) {
      const result = await outcome(folded, path);
      expect(result, path).toMatchObject({ status: 403, reached: false });
    }
  });

  it("the target receives the normalised path; other escapes stay encoded, never decoded twice", async () => {
    const proxyId = await newProxy();
    expect(await outcome(proxyId, "/x/%7euser/a%2fb%3a/%2561dmin?q=%61")).toMatchObject({
      status: 200,
      reached: true,
    });
    // The query is passed as sent; the path normalised.
    expect(received.at(-1)!.url).toBe("/base/x/~user/a%2Fb%3A/%2561dmin?q=%61");
  });

  it("an encoded dot segment becomes a dot segment and is refused", async () => {
    const proxyId = await newProxy();
    for (const path of ["/v1/%2e%2e/admin", "/v1/%2E/x", "/v1/.%2e/x"]) {
      const result = await outcome(proxyId, path);
      expect(result, path).toMatchObject({ status: 400, reached: false });
    }
  });
});

describe("the caller's credential is not in the view of user code and predicates", () => {
  const SHARED = randomBytes(32).toString("hex");
  const ISSUER = "https://issuer.view.test";
  const AUDIENCE = "proxy-gateway";

  /** Each caller auth type: the secret stored, and the header or query that presents it. */
  const callers = async () => {
    const bearerToken = `bearer-${randomUUID()}`;
    const jwtToken = [{ alg: "HS256", typ: "JWT" }, { sub: "static", jti: randomUUID() }, "sig"]
      .map((part) => base64url.encode(typeof part === "string" ? part : JSON.stringify(part)))
      .join(".");
    const password = `pw-${randomUUID()}`;
    const basic = Buffer.from(`svc-user:${password}`).toString("base64");
    const headerKey = `hk-${randomUUID()}`;
    const queryKey = `qk-${randomUUID()}`;
    const verified = await new SignJWT({ scope: "read" })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject("svc-view")
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + 600)
      .sign(new TextEncoder().encode(SHARED));
    return [
      {
        name: "apiKey header",
        authType: "apiKey",
        secret: { keyName: "x-api-key", keyValue: headerKey },
        presented: [headerKey],
        headers: [["x-api-key", headerKey]] as [string, string][],
        query: "",
      },
      {
        name: "apiKey query",
        authType: "apiKey",
        secret: { keyName: "api_key", keyValue: queryKey, placement: "query" },
        presented: [queryKey],
        headers: [] as [string, string][],
        query: `&api_key=${queryKey}`,
      },
      {
        name: "bearer",
        authType: "bearer",
        secret: { token: bearerToken },
        presented: [bearerToken],
        headers: [["authorization", `Bearer ${bearerToken}`]] as [string, string][],
        query: "",
      },
      {
        name: "basicAuth",
        authType: "basicAuth",
        secret: { username: "svc-user", password },
        presented: [password, basic],
        headers: [["authorization", `Basic ${basic}`]] as [string, string][],
        query: "",
      },
      {
        name: "jwt",
        authType: "jwt",
        secret: { token: jwtToken },
        presented: [jwtToken],
        headers: [["authorization", jwtToken]] as [string, string][],
        query: "",
      },
      {
        name: "jwtVerify",
        authType: "jwtVerify",
        secret: {
          algorithms: ["HS256"],
          issuer: ISSUER,
          audience: AUDIENCE,
          subject: "svc-*",
          sharedSecret: SHARED,
        },
        presented: [verified, SHARED],
        headers: [["authorization", `Bearer ${verified}`]] as [string, string][],
        query: "",
      },
    ];
  };

  /** Every variable a transform could bind the credential with, written into the outgoing request. */
  const VARIABLES = [
    { name: "auth", source: "header", key: "authorization" },
    { name: "headerKey", source: "header", key: "x-api-key" },
    { name: "queryKey", source: "query", key: "api_key" },
    { name: "sub", source: "token", key: "sub" },
  ];
  const LEAKING_CODE = [
    "export default (context, request) => {",
    "  const seen = JSON.stringify({ variables: context.variables, headers: request.headers, query: request.query, claims: context.claims });",
    "  return {",
    "    ...request,",
    '    headers: { ...request.headers, "x-seen": encodeURIComponent(seen) },',
    '    body: { seen, reversed: seen.split("").reverse().join("") },',
    "  };",
    "};",
  ].join("\n");

  it("for every caller auth type: transform variables and request, meter predicates, the target and the request log never see it", async () => {
    for (const caller of await callers()) {
      const credential = await created(
        owner.api.post(`${api()}/credentials`, {
          credentialName: `caller-${caller.name}`,
          credentialType: "proxy",
          authType: caller.authType,
          region: REGION,
          secret: caller.secret,
        }),
        "credentials",
      );
      const proxyId = await newProxy({}, { ...parts, proxyCredentialId: credential.credentialId });
      await newRequestTransform(proxyId, { variables: VARIABLES, code: LEAKING_CODE });
      // A response transform writing what it sees into the answer, which the request log stores.
      await created(
        owner.api.post(`${api()}/proxies/${proxyId}/response-transforms`, {
          transformMode: "all",
          transformActive: true,
          variables: VARIABLES,
          code: [
            "export default (context, request, response) => {",
            "  const seen = JSON.stringify({ variables: context.variables, request });",
            '  return { ...response, body: { seen, reversed: seen.split("").reverse().join("") } };',
            "};",
          ].join("\n"),
        }),
        "responseTransforms",
      );
      // Meters whose predicates would hold on the credential: none may count the request.
      for (const predicate of [
        { headers: [{ name: "authorization", presence: "present" }] },
        { headers: [{ name: "x-api-key", presence: "present" }] },
        { query: [{ name: "api_key", presence: "present" }] },
      ])
        await newMeter(proxyId, {
          meterMode: "conditional",
          effect: "include",
          ...predicate,
          limits: { hour: 1 },
        });

      for (let attempt = 0; attempt < 2; attempt++) {
        const result = await outcome(proxyId, `/c?x=1${caller.query}`, {
          method: "POST",
          key: false,
          headers: [...caller.headers, ["content-type", "application/json"]],
          body: "{}",
        });
        // A meter that saw the credential would refuse the second request (429).
        expect.soft(result.status, `${caller.name} #${attempt}: ${result.answer.text}`).toBe(200);
        if (result.status !== 200) continue;
        expect(result.reached).toBe(true);
        const got = received.at(-1)!;
        const seen = JSON.parse(JSON.parse(got.body).seen);
        expect.soft(seen.variables.auth, caller.name).toBeUndefined();
        expect.soft(seen.variables.headerKey, caller.name).toBeUndefined();
        expect.soft(seen.variables.queryKey, caller.name).toBeUndefined();
        if (caller.authType === "jwtVerify") {
          expect(seen.variables.sub).toBe("svc-view"); // the verified claims stand for it
          expect(seen.claims.sub).toBe("svc-view");
        }
        const requestId = String(result.answer.headers["x-request-id"]);
        const answered = JSON.parse(JSON.parse(result.answer.text).seen);
        expect.soft(answered.variables.auth, caller.name).toBeUndefined();
        const logged = JSON.stringify(await loggedDetail(owner.api, clientId, proxyId, requestId));
        expect(logged).toContain("reversed"); // the transformed answer is what the log holds
        const atTarget = JSON.stringify(got);
        for (const secret of caller.presented) {
          const reversed = secret.split("").reverse().join("");
          for (const text of [secret, reversed, encodeURIComponent(secret), encodeURIComponent(reversed)]) {
            expect.soft(atTarget.includes(text), `${caller.name}: the target saw the credential`).toBe(false);
            expect
              .soft(logged.includes(text), `${caller.name}: the request log holds the credential`)
              .toBe(false);
          }
        }
      }
    }
  }, 120_000);
});
