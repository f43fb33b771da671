/**
 * Transforms on the data plane (issue 10 "Running code"), over real HTTP against the local stack,
 * the emulator and a real loopback target: both kinds, TypeScript, conditional mode, priority,
 * inactive transforms, DELETE and PUT effective on the next request, the request log showing the
 * transformed response, user code never seeing the target credential, and every hostile case of
 * the issue, each a clear 500 transform-error followed by a normal request on another proxy.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loggedDetail, loggedRecord } from "../support/request-logs.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const REGION = "us-east-1";
const KEY = `caller-key-${randomUUID()}`;
const TOKEN = `upstream-token-${randomUUID()}`;

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let target: Server;
let targetBase: string;
/** What the target received, newest last. */
const received: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = [];
let parts: { proxyCredentialId: string; targetCredentialId: string; targetId: string };

beforeAll(async () => {
  // The target answers JSON describing what it received (never the credential itself).
  target = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      res.writeHead(200, { "content-type": "application/json", "x-target": "yes" });
      res.end(
        JSON.stringify({
          user_name: "ada",
          method: req.method,
          url: req.url,
          credentialOk: req.headers.authorization === `Bearer ${TOKEN}`,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  stack = await startTestStack();
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Transforms DP Co");
  const api = `/api/clients/${clientId}`;
  const [proxyCredential, targetCredential, theTarget] = await Promise.all([
    created(
      owner.api.post(`${api}/credentials`, {
        credentialName: "caller",
        credentialType: "proxy",
        authType: "apiKey",
        region: REGION,
        secret: { keyName: "x-api-key", keyValue: KEY },
      }),
      "credentials",
    ),
    created(
      owner.api.post(`${api}/credentials`, {
        credentialName: "upstream",
        credentialType: "target",
        authType: "bearer",
        region: REGION,
        secret: { token: TOKEN },
      }),
      "credentials",
    ),
    created(
      owner.api.post(`${api}/targets`, {
        targetName: "echo",
        targetRegion: REGION,
        targetBaseURL: `${targetBase}/base`,
        targetTestPath: "/",
      }),
      "targets",
    ),
  ]);
  parts = {
    proxyCredentialId: proxyCredential.credentialId,
    targetCredentialId: targetCredential.credentialId,
    targetId: theTarget.targetId,
  };
});
afterAll(async () => {
  await stack?.stop();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
});

async function newProxy(): Promise<string> {
  const proxy = await created(
    owner.api.post(`/api/clients/${clientId}/proxies`, {
      proxyName: `p-${randomUUID().slice(0, 8)}`,
      proxyRegion: REGION,
      proxyProxyCredentialId: parts.proxyCredentialId,
      proxyTargetId: parts.targetId,
      proxyTargetCredentialId: parts.targetCredentialId,
    }),
    "proxies",
  );
  return proxy.proxyId as string;
}

type Kind = "request" | "response";
const transformsPath = (proxyId: string, kind: Kind) =>
  `/api/clients/${clientId}/proxies/${proxyId}/${kind}-transforms`;

async function newTransform(
  proxyId: string,
  kind: Kind,
  code: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const transform = await created(
    owner.api.post(transformsPath(proxyId, kind), {
      transformMode: "all",
      transformActive: true,
      code,
      ...extra,
    }),
    kind === "request" ? "requestTransforms" : "responseTransforms",
  );
  return transform.transformId as string;
}

const call = (proxyId: string, path = "/items/1", init: RequestInit = {}) =>
  callDataPlane(`${stack.regions[REGION]}/api/${proxyId}${path}`, {
    ...init,
    headers: { "x-api-key": KEY, ...(init.headers as Record<string, string> | undefined) },
  });

const jsonOf = (result: { text: string }) => JSON.parse(result.text);
const lastReceived = () => received.at(-1)!;

/** A request transform tagging the request with `x-ran: <name>`. */
const tagRequest = (name: string) =>
  `export default (context, request) => ({ ...request, headers: { ...request.headers, "x-ran": "${name}" } })`;

/** The detail of a request's log record, once written. */
const detailOf = (proxyId: string, requestId: string) =>
  loggedDetail(owner.api, clientId, proxyId, requestId);

const recordOf = (proxyId: string, requestId: string) =>
  loggedRecord(owner.api, clientId, proxyId, requestId);

describe("request and response transforms", () => {
  it("runs a TypeScript request transform: header added, field renamed, path and query changed; the credential applied after", async () => {
    const proxyId = await newProxy();
    await newTransform(
      proxyId,
      "request",
      [
        "interface Req { method: string; path: string; query: Record<string, string | string[]>; headers: Record<string, string>; body: any }",
        "export default function (context: { requestId: string }, request: Req): Req {",
        "  const { user_name, ...rest } = request.body as { user_name: string };",
        "  return {",
        "    ...request,",
        "    path: '/v2' + request.path,",
        "    query: { ...request.query, added: 'yes' },",
        "    headers: { ...request.headers, 'x-request-id-seen': context.requestId, authorization: 'Bearer forged' },",
        "    body: { ...rest, userName: user_name },",
        "  };",
        "}",
      ].join("\n"),
    );
    const result = await call(proxyId, "/items/1?q=1", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user_name: "ada", n: 1 }),
    });
    expect(result.status, result.text).toBe(200);
    const seen = lastReceived();
    expect(seen.method).toBe("POST");
    expect(seen.url).toBe("/base/v2/items/1?q=1&added=yes");
    expect(seen.headers.authorization).toBe(`Bearer ${TOKEN}`); // the code could not override it
    expect(seen.headers["x-request-id-seen"]).toBe(result.headers.get("x-request-id"));
    expect(seen.headers["x-api-key"]).toBeUndefined();
    expect(JSON.parse(seen.body)).toEqual({ n: 1, userName: "ada" });
  });

  it("runs a response transform; the request log shows the transformed response", async () => {
    const proxyId = await newProxy();
    await newTransform(
      proxyId,
      "response",
      `export default (context, request, response) => {
        const { user_name, ...rest } = response.body;
        return { status: 203, headers: { ...response.headers, "x-transformed": request.method }, body: { ...rest, userName: user_name } };
      }`,
    );
    const result = await call(proxyId);
    expect(result.status).toBe(203);
    expect(result.headers.get("x-transformed")).toBe("GET");
    expect(result.headers.get("x-target")).toBe("yes");
    expect(result.headers.get("service-proxy-code")).toBe("proxy-access-granted");
    const body = jsonOf(result);
    expect(body.userName).toBe("ada");
    expect(body.user_name).toBeUndefined();
    const requestId = result.headers.get("x-request-id")!;
    const detail = await detailOf(proxyId, requestId);
    expect(detail.statusCode).toBe(203);
    expect(JSON.parse(detail.responseBody)).toEqual(body);
    expect(detail.responseHeaders["x-transformed"]).toBe("GET");
    const record = await recordOf(proxyId, requestId);
    expect(record.targetData.status).toBe(200); // the target's own status stays in the trace
  });

  it("never shows the target credential (nor the caller's) to user code", async () => {
    const proxyId = await newProxy();
    // The request transform sends everything it was given to the target, in the body.
    await newTransform(
      proxyId,
      "request",
      "export default (context, request) => ({ ...request, method: 'POST', body: { context, request } })",
    );
    await newTransform(
      proxyId,
      "response",
      "export default (context, request, response) => ({ ...response, body: { context, request, response } })",
    );
    const result = await call(proxyId, "/items/1", { headers: { authorization: "Basic Zm9vOmJhcg==" } });
    expect(result.status, result.text).toBe(200);
    const given = lastReceived().body;
    expect(given).toContain('"path":"/items/1"');
    for (const text of [given, result.text]) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(KEY);
      expect(text).not.toContain("Zm9vOmJhcg==");
    }
    expect(jsonOf(result).response.body.credentialOk).toBe(true);
  });

  it("conditional mode: a transform runs only for the requests its predicates match", async () => {
    const proxyId = await newProxy();
    await newTransform(proxyId, "request", tagRequest("tagged"), {
      transformMode: "conditional",
      effect: "include",
      methods: ["POST"],
      headers: [{ name: "x-tag-me", pattern: "^yes$", presence: "present" }],
    });
    await newTransform(
      proxyId,
      "response",
      "export default (c, q, r) => ({ ...r, headers: { ...r.headers, 'x-slow': 'no' } })",
      { transformMode: "conditional", effect: "exclude", path: { pattern: "^/skip", presence: "present" } },
    );
    const tagged = await call(proxyId, "/a", { method: "POST", headers: { "x-tag-me": "yes" }, body: "x" });
    expect(lastReceived().headers["x-ran"]).toBe("tagged");
    expect(tagged.headers.get("x-slow")).toBe("no");
    await call(proxyId, "/a", { method: "POST", headers: { "x-tag-me": "no" }, body: "x" });
    expect(lastReceived().headers["x-ran"]).toBeUndefined();
    const skipped = await call(proxyId, "/skip/1");
    expect(lastReceived().headers["x-ran"]).toBeUndefined();
    expect(skipped.headers.get("x-slow")).toBeNull();
  });

  it("priority: of two matching transforms the higher wins; of equal priority the older; inactive never runs", async () => {
    const proxyId = await newProxy();
    await newTransform(proxyId, "request", tagRequest("older-5"), { priority: 5 });
    await newTransform(proxyId, "request", tagRequest("newer-5"), { priority: 5 });
    await newTransform(proxyId, "request", tagRequest("inactive-9"), { priority: 9, transformActive: false });
    await call(proxyId);
    expect(lastReceived().headers["x-ran"]).toBe("older-5");
    await newTransform(proxyId, "request", tagRequest("high-7"), { priority: 7 });
    await call(proxyId);
    expect(lastReceived().headers["x-ran"]).toBe("high-7");
  });

  it("DELETE is effective on the next request; PUT with new code too", async () => {
    const proxyId = await newProxy();
    const transformId = await newTransform(proxyId, "request", tagRequest("v1"));
    await call(proxyId);
    expect(lastReceived().headers["x-ran"]).toBe("v1");
    const put = await owner.api.put(`${transformsPath(proxyId, "request")}/${transformId}`, {
      code: tagRequest("v2"),
    });
    expect(put.status).toBe(200);
    await call(proxyId);
    expect(lastReceived().headers["x-ran"]).toBe("v2");
    const deleted = await owner.api.delete(`${transformsPath(proxyId, "request")}/${transformId}`);
    expect(deleted.status).toBe(200);
    const after = await call(proxyId);
    expect(after.status).toBe(200);
    expect(lastReceived().headers["x-ran"]).toBeUndefined();
  });
});

describe("failures and hostile code", () => {
  let healthy: string;
  beforeAll(async () => {
    healthy = await newProxy();
    await newTransform(healthy, "request", tagRequest("healthy"));
    await newTransform(
      healthy,
      "response",
      "export default (c, q, r) => ({ ...r, body: { ...r.body, renamed: r.body.user_name } })",
    );
  });

  /** The next request on another proxy is served normally, both transforms run. */
  async function healthyServed() {
    const result = await call(healthy);
    expect(result.status, result.text).toBe(200);
    expect(lastReceived().headers["x-ran"]).toBe("healthy");
    expect(jsonOf(result).renamed).toBe("ada");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  }

  async function expectTransformError(proxyId: string, transformId: string, kind: Kind, reason: RegExp) {
    const hitsBefore = received.length;
    const result = await call(proxyId);
    expect(result.status, result.text).toBe(500);
    expect(result.headers.get("service-proxy-code")).toBe("transform-error");
    const message = result.headers.get("service-proxy-message")!;
    expect(message).toContain(
      `${kind === "request" ? "Request" : "Response"} transform ${transformId} failed`,
    );
    expect(message).toMatch(reason);
    expect(jsonOf(result)).toEqual({ code: "transform-error", message });
    if (kind === "request") expect(received.length).toBe(hitsBefore); // the target was not called
    const record = await recordOf(proxyId, result.headers.get("x-request-id")!);
    expect(record.proxyData.status).toBe(500);
    expect(record.proxyData.message).toBe(message);
    expect(record.targetData === null).toBe(kind === "request");
    return result;
  }

  const hostile: [string, Kind, string, RegExp][] = [
    ["an infinite loop", "request", "export default () => { while (true) {} }", /\(timeout\)/],
    [
      "deep recursion",
      "request",
      "function down(n) { return down(n + 1) + 1 }\nexport default (c, r) => { down(0); return r }",
      /\(memory\).*stack/,
    ],
    [
      "a huge return value",
      "response",
      "export default (c, q, r) => ({ ...r, body: 'x'.repeat(7 * 1024 * 1024) })",
      // Encoding megabytes of JSON takes QuickJS 100-600 ms: often past the deadline and its grace,
      // where the sandbox worker is killed (docs/transforms.md, "Deadlines").
      /\((invalid|memory|timeout)\)/,
    ],
    [
      "a constructor escape",
      "request",
      "export default (c, r) => { const p = [].constructor.constructor('return process')(); return { ...r, body: p.env } }",
      /\(error\): ReferenceError: .*process/,
    ],
    [
      "another constructor escape (async function constructor)",
      "request",
      "export default async (c, r) => { const F = (async () => {}).constructor; const p = await F('return this.process.mainModule')(); return { ...r, body: p } }",
      /\(error\): TypeError/,
    ],
    [
      "prototype pollution of the objects it is given",
      "request",
      "export default (c, r) => { Object.prototype.polluted = 1; Object.prototype.toJSON = function () { return 'pwned' }; return r }",
      /\(invalid\): a request transform must return the request object/,
    ],
  ];

  it.each(hostile)(
    "%s: a clear 500 transform-error, then another proxy is served normally",
    async (_name, kind, code, reason) => {
      const proxyId = await newProxy();
      const transformId = await newTransform(proxyId, kind, code);
      await expectTransformError(proxyId, transformId, kind, reason);
      await healthyServed();
    },
  );

  it("a memory bomb, twice in a row, then a normal request on another proxy", async () => {
    const proxyId = await newProxy();
    const transformId = await newTransform(
      proxyId,
      "request",
      "export default (c, r) => { let s = 'bomb'; for (;;) s += s }",
    );
    await expectTransformError(
      proxyId,
      transformId,
      "request",
      /\(memory\): the transform ran out of memory/,
    );
    await expectTransformError(
      proxyId,
      transformId,
      "request",
      /\(memory\): the transform ran out of memory/,
    );
    await healthyServed();
  });

  it("cannot read another proxy's data: its module state and globals are not there", async () => {
    const holder = await newProxy();
    await newTransform(
      holder,
      "request",
      [
        "var stash = 'none';",
        "const global = [].constructor.constructor('return this')();",
        "export default (c, r) => { stash = r.headers['x-secret']; global.secretOfHolder = stash; return r }",
      ].join("\n"),
    );
    await call(holder, "/items/1", { headers: { "x-secret": "holder-secret" } });
    const reader = await newProxy();
    const readerId = await newTransform(
      reader,
      "request",
      "export default (c, r) => ({ ...r, body: { stolen: secretOfHolder, stash } })",
    );
    const result = await expectTransformError(
      reader,
      readerId,
      "request",
      /ReferenceError: .*secretOfHolder/,
    );
    expect(result.text).not.toContain("holder-secret");
    await healthyServed();
  });

  it("a transform that throws at the top of its module fails each request, clearly", async () => {
    const proxyId = await newProxy();
    const transformId = await newTransform(
      proxyId,
      "response",
      "throw new RangeError('broken at load')\nexport default (c, q, r) => r",
    );
    await expectTransformError(proxyId, transformId, "response", /RangeError: broken at load/);
    await healthyServed();
  });
});
