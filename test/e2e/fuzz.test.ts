/**
 * "Never a 500": every route of the Core API manifest × a fixed corpus of bad inputs (malformed
 * escapes, dot segments, very long segments, lone surrogates in strings and keys, deep nesting,
 * prototype-named keys in bodies, query and headers, wrong JSON types, invalid JSON, huge numbers,
 * nulls), over real HTTP against the local stack, with a real user token and real resources so that
 * path parameters hit real ids as well as bogus ones. The cases are generated from a fixed seed, so
 * a failure reproduces; no answer may be a 5xx.
 *
 * Requests are sent with node:http, not fetch: fetch (the WHATWG URL parser) would normalise
 * `%2e%2e` and `..` away before they reach the server.
 */

import { randomUUID } from "node:crypto";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CORE_API_ROUTES } from "#lib/api/routes.ts";
import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { keys } from "#lib/db/keys.ts";
import { issueToken } from "#lib/domain/tokens.ts";
import type { RouteDefinition } from "#lib/infra/api-manifest.ts";
import {
  apiClient,
  createClientFor,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const SEED = 0x5eed7;
const US = "us-east-1";
const CONCURRENCY = 6;

let stack: TestStack;
let owner: TestUser;
let echo: Server;
let echoBase: string;
/** Real ids by path parameter name. */
const real: Record<string, string> = {};

// ---------------------------------------------------------------- a seeded generator (mulberry32)
function prng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    int: (n: number) => Math.floor(next() * n),
    shuffle<T>(items: readonly T[]): T[] {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i -= 1) {
        const j = Math.floor(next() * (i + 1));
        [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
      }
      return copy;
    },
  };
}

/** Hands out the entries of a corpus in a seeded order, round-robin, so every entry gets used. */
function cycler<T>(items: readonly T[], random: ReturnType<typeof prng>) {
  let order = random.shuffle(items);
  let index = 0;
  return () => {
    if (index === order.length) {
      order = random.shuffle(items);
      index = 0;
    }
    return order[index++] as T;
  };
}

// ---------------------------------------------------------------- the corpus
const deep = (levels: number, leaf: string = "x") =>
  `${'{"a":'.repeat(levels)}"${leaf}"${"}".repeat(levels)}`;
const deepArray = (levels: number) => `${"[".repeat(levels)}1${"]".repeat(levels)}`;

/** Path parameter values, as sent on the wire (still percent-encoded). */
const PATH_VALUES = [
  "%ZZ",
  "%",
  "%E0%A4%A",
  "%ED%A0%80", // a UTF-8-encoded lone surrogate
  "%C0%AF", // overlong "/"
  "%FF%FE",
  "%2e%2e",
  "%2E%2e",
  "..",
  ".",
  "%2e",
  "%2F",
  "a%2Fb",
  "%00",
  "%20",
  "x".repeat(4000),
  "%41".repeat(1000),
  "constructor",
  "__proto__",
  "toString",
  "hasOwnProperty",
  "%F0%9F%98%80",
  "~!$&'()*+,;=:@",
  "null",
  "-1",
  randomUUID(),
  "00000000-0000-0000-0000-000000000000",
];

/** Query strings, raw. */
const QUERIES = [
  "constructor=1",
  "__proto__=1",
  "toString=x",
  "hasOwnProperty=1",
  "__proto__[a]=1",
  "constructor&constructor=2",
  "page=%ZZ",
  "page=-1",
  "page=1e400",
  "limit=99999999999999999999999",
  "page=1&page=2",
  "limit=0",
  "immediatelyDelete=maybe",
  "immediatelyDelete=constructor",
  "includeTemporary=%00",
  "%ED%A0%80=1",
  "a=%ED%A0%80",
  "=",
  "&&&",
  `x=${"y".repeat(4000)}`,
  "code=%ZZ&state=%ZZ",
  `state=${"a".repeat(2000)}`,
  "error=access_denied&state=constructor",
];

/** Extra request headers. */
const HEADERS: Record<string, string>[] = [
  { constructor: "1" },
  // A literal `{ __proto__: "1" }` would set the prototype: this one has the key as data.
  Object.fromEntries([["__proto__", "1"]]),
  { toString: "x" },
  { hasOwnProperty: "1" },
  { "content-type": "text/plain" },
  { "content-type": "application/octet-stream" },
  { "content-type": "application/json; charset=latin1" },
  { "x-forwarded-for": "not an ip" },
  { host: "evil.example" },
  { "x-a": "b".repeat(6000) },
];

/** Whole request bodies, raw. */
const RAW_BODIES: (string | Buffer)[] = [
  "",
  "{",
  "[",
  "nul",
  '{"a":}',
  '{"a":1,}',
  "null",
  "true",
  "0",
  "1e400",
  "-0",
  "[]",
  "{}",
  '"text"',
  '"\\ud800"',
  '{"\\ud800":1}',
  '{"\\udfff\\ud800":"x"}',
  deep(40),
  deep(300),
  deepArray(10_000),
  deep(10_000),
  Buffer.from([0xff, 0xfe, 0x7b, 0x7d]),
  Buffer.from("\ufeff{}", "utf8"),
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"constructor":1}',
  `{"a":"${"x".repeat(200_000)}"}`,
];

/**
 * Field values, as raw JSON text (so that 1e400 and lone surrogates survive). Prototype-named keys
 * (`constructor`, `__proto__`) reach maps that are stored: lib/aws/document-client.ts keeps them.
 */
const FIELD_VALUES: { json: string; prototypeKey?: boolean }[] = [
  { json: "null" },
  { json: '""' },
  { json: '"\\ud800"' },
  { json: '"a\\udc00b"' },
  { json: '"\\u0000"' },
  { json: "1e400" },
  { json: "-1e400" },
  { json: "1e300" },
  { json: "9007199254740993" },
  { json: "-0" },
  { json: "0.1" },
  { json: "true" },
  { json: "[]" },
  { json: "{}" },
  { json: "[null]" },
  { json: '"constructor"' },
  { json: '"__proto__"' },
  { json: deep(33) },
  { json: deep(300) },
  { json: deepArray(10_000) },
  { json: `"${"x".repeat(100_000)}"` },
  { json: '{"\\ud800":1}' },
  { json: '{"x":"\\ud800"}' },
  { json: '{"":1}' },
  { json: '{"a":{"":1}}' },
  { json: '{"a":9007199254740993}' },
  { json: '{"a":1e-300}' },
  { json: '{"a":[[]]}' },
  { json: '{"constructor":1}', prototypeKey: true },
  { json: '{"__proto__":1}', prototypeKey: true },
  { json: '{"toString":"x","hasOwnProperty":"y"}', prototypeKey: true },
  { json: '{"constructor":{"prototype":{"a":1}}}', prototypeKey: true },
  { json: '{"constructor":"x"}', prototypeKey: true },
];

// ---------------------------------------------------------------- valid bodies to mutate
const bodyTemplates = (): Partial<Record<string, Record<string, unknown>>> => ({
  "POST /api/clients": { clientName: "Fuzz Co" },
  "PUT /api/clients/{clientId}": { clientName: "Fuzz Co" },
  "PUT /api/clients/{clientId}/members/{userId}": { roles: ["owner"] },
  "POST /api/clients/{clientId}/invites": { email: "fuzz@example.test", role: "user" },
  "PUT /api/clients/{clientId}/invites/{inviteId}": { roles: ["user"] },
  "PUT /api/users/{userId}/invites/{inviteId}": { acceptInvite: false },
  "PUT /api/users/{userId}": { userFirstName: "Fuzz" },
  "POST /api/clients/{clientId}/credentials": {
    credentialName: "fuzz",
    credentialType: "target",
    authType: "bearer",
    region: US,
    secret: { token: "fuzz-token" },
  },
  "PUT /api/clients/{clientId}/credentials/{credentialId}": { credentialName: "fuzz" },
  "POST /api/clients/{clientId}/credentials/{credentialId}/test": {
    targetId: real.targetId,
    method: "POST",
    path: "/echo",
    body: { a: { b: 1 } },
  },
  "POST /api/clients/{clientId}/targets": {
    targetName: "fuzz",
    targetRegion: US,
    targetBaseURL: echoBase,
    targetTestPath: "/health",
  },
  "PUT /api/clients/{clientId}/targets/{targetId}": { targetName: "fuzz" },
  "POST /api/clients/{clientId}/proxies": {
    proxyName: "fuzz",
    proxyRegion: US,
    proxyProxyCredentialId: real.credentialId,
    proxyTargetId: real.targetId,
    proxyTargetCredentialId: real.targetCredentialId,
    proxyAdditionalData: { a: { b: 1 } },
    proxyAdditionalHeaders: { "x-a": "b" },
    proxyAdditionalQueryParams: { q: "1" },
  },
  "PUT /api/clients/{clientId}/proxies/{proxyId}": {
    proxyAdditionalData: { a: { b: 1 } },
    proxyAdditionalHeaders: { "x-a": "b" },
    proxyAdditionalQueryParams: { q: "1" },
  },
  ...Object.fromEntries(
    ["credentials/{credentialId}", "proxies/{proxyId}", "targets/{targetId}"].map((parent) => [
      `POST /api/clients/{clientId}/${parent}/rules`,
      { effect: "deny", priority: 5, methods: ["DELETE"], pathPattern: "^/admin", notes: "fuzz" },
    ]),
  ),
});

/** The template with one field (or one field of a nested map) replaced by raw JSON. */
function mutate(template: Record<string, unknown>, path: string[], json: string): string {
  const marker = `__FUZZ_${randomUUID()}__`;
  const copy = structuredClone(template);
  let holder: Record<string, unknown> = copy;
  // defineProperty: a key named `__proto__` must become data, not set the prototype.
  const set = (target: Record<string, unknown>, key: string, value: unknown) =>
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  for (const key of path.slice(0, -1)) {
    const next = Object.hasOwn(holder, key) ? holder[key] : undefined;
    if (typeof next !== "object" || next === null || Array.isArray(next)) set(holder, key, {});
    holder = holder[key] as Record<string, unknown>;
  }
  set(holder, path.at(-1) as string, marker);
  return JSON.stringify(copy).replace(`"${marker}"`, json);
}

/** Field paths of a template: each top-level field and each field of a nested object. */
function fieldPaths(template: Record<string, unknown>): string[][] {
  const paths: string[][] = [];
  for (const [key, value] of Object.entries(template)) {
    paths.push([key]);
    if (typeof value === "object" && value !== null && !Array.isArray(value))
      for (const inner of Object.keys(value)) paths.push([key, inner]);
  }
  // Keys that are not fields at all: prototype names and an ill-formed one.
  paths.push(["constructor"], ["__proto__"], ["\ud800"]);
  return paths;
}

// ---------------------------------------------------------------- the cases
interface Case {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** What was varied, for the report. */
  kind: "path" | "query" | "header" | "body-raw" | "body-field";
  route: string;
  /** Cases that may delete a fixture run after all others. */
  order: number;
}

function fillPath(route: RouteDefinition, replace?: { name: string; value: string }): string {
  return route.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    replace?.name === name ? replace.value : (real[name] ?? randomUUID()),
  );
}

const routeOrder = (route: RouteDefinition) => {
  if (route.method !== "DELETE") return 0;
  if (route.path === "/api/users/{userId}") return 3;
  if (route.path === "/api/clients/{clientId}") return 2;
  return 1;
};

function generateCases(): Case[] {
  const random = prng(SEED);
  const nextPathValue = cycler(PATH_VALUES, random);
  const nextQuery = cycler(QUERIES, random);
  const nextHeader = cycler(HEADERS, random);
  const nextRawBody = cycler(RAW_BODIES, random);
  const nextFieldValue = cycler(FIELD_VALUES, random);
  const templates = bodyTemplates();
  const cases: Case[] = [];
  const json = { "content-type": "application/json" };
  for (const route of CORE_API_ROUTES) {
    const key = `${route.method} ${route.path}`;
    const base = { method: route.method, route: key, order: routeOrder(route) };
    const params = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);
    // Path parameters: bad values in each position, the others real.
    for (const name of params)
      for (let i = 0; i < 3; i += 1)
        cases.push({
          ...base,
          kind: "path",
          path: fillPath(route, { name, value: nextPathValue() }),
          headers: {},
        });
    // Query strings and headers, on the real ids.
    for (let i = 0; i < 2; i += 1)
      cases.push({ ...base, kind: "query", path: `${fillPath(route)}?${nextQuery()}`, headers: {} });
    cases.push({ ...base, kind: "header", path: fillPath(route), headers: nextHeader(), body: "{}" });
    if (route.method === "GET") continue;
    // Bodies: whole bodies, then one field at a time.
    for (let i = 0; i < 3; i += 1)
      cases.push({ ...base, kind: "body-raw", path: fillPath(route), headers: json, body: nextRawBody() });
    const template = templates[key] ?? (route.method === "DELETE" ? { immediatelyDelete: false } : {});
    const paths = random.shuffle(fieldPaths(template));
    const count = templates[key] ? 8 : 2;
    for (let i = 0; i < count; i += 1) {
      const value = nextFieldValue();
      cases.push({
        ...base,
        kind: "body-field",
        path: fillPath(route),
        headers: json,
        body: mutate(template, paths[i % paths.length] as string[], value.json),
      });
    }
    // Every map field (stored or sent on) with each prototype-named key.
    for (const [field, value] of Object.entries(template)) {
      if (typeof value !== "object" || value === null || Array.isArray(value)) continue;
      for (const entry of FIELD_VALUES.filter((v) => v.prototypeKey))
        cases.push({
          ...base,
          kind: "body-field",
          path: fillPath(route),
          headers: json,
          body: mutate(template, [field], entry.json),
        });
    }
  }
  return cases.sort((a, b) => a.order - b.order);
}

// ---------------------------------------------------------------- raw HTTP
interface Answer {
  status: number;
  text: string;
}

function send(method: string, path: string, headers: Record<string, string>, body?: string | Buffer) {
  const url = new URL(stack.baseUrl);
  return new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method,
        path, // sent as is: no normalisation
        headers: { authorization: owner.token, ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function pool<T, R>(items: readonly T[], size: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: size }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await run(items[index] as T);
      }
    }),
  );
  return results;
}

// ---------------------------------------------------------------- fixtures
async function created(path: string, body: unknown, wrapper: string, idField: string): Promise<string> {
  const response = await owner.api.post(path, body);
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body[wrapper][0][idField] as string;
}

beforeAll(async () => {
  echo = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", () => resolve()));
  echoBase = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
  // The authorizer's decision is cached per token, as API Gateway does in production: the fuzz
  // measures the handlers, not ~1,000 repeated token look-ups.
  stack = await startTestStack();
  owner = await stack.newUser();
  const clientId = await createClientFor(owner, "Fuzz Co");
  // A generous plan: the fuzz sends ~1,000 requests with one token within a minute.
  await dynamo(getConfig().homeRegion).send(
    new UpdateCommand({
      TableName: getConfig().tableName,
      Key: keys.clientConfig(clientId),
      UpdateExpression: "SET planTier = :tier, planStatus = :status, limits = :limits",
      ExpressionAttributeValues: {
        ":tier": "enterprise_custom",
        ":status": "active",
        ":limits": { requestsPerMinute: 10_000 },
      },
    }),
  );
  // A new token: the first one's cached decision still carries the basic plan's limit.
  const { token } = await issueToken(owner.userId);
  owner = { ...owner, token, api: apiClient(stack.baseUrl, token) };
  const base = `/api/clients/${clientId}`;
  real.clientId = clientId;
  real.userId = owner.userId;
  real.credentialId = await created(
    `${base}/credentials`,
    {
      credentialName: "in",
      credentialType: "proxy",
      authType: "apiKey",
      region: US,
      secret: { keyName: "x-api-key", keyValue: randomUUID() },
    },
    "credentials",
    "credentialId",
  );
  real.targetCredentialId = await created(
    `${base}/credentials`,
    {
      credentialName: "out",
      credentialType: "target",
      authType: "bearer",
      region: US,
      secret: { token: randomUUID() },
    },
    "credentials",
    "credentialId",
  );
  real.targetId = await created(
    `${base}/targets`,
    { targetName: "echo", targetRegion: US, targetBaseURL: echoBase, targetTestPath: "/health" },
    "targets",
    "targetId",
  );
  real.proxyId = await created(
    `${base}/proxies`,
    {
      proxyName: "main",
      proxyRegion: US,
      proxyProxyCredentialId: real.credentialId,
      proxyTargetId: real.targetId,
      proxyTargetCredentialId: real.targetCredentialId,
    },
    "proxies",
    "proxyId",
  );
  real.ruleId = await created(
    `${base}/proxies/${real.proxyId}/rules`,
    { effect: "deny", priority: 1, pathPattern: "^/never" },
    "rules",
    "ruleId",
  );
  real.inviteId = await created(
    `${base}/invites`,
    { email: "invitee@example.test", role: "user" },
    "invites",
    "inviteId",
  );
  const memberships = await owner.api.get(`/api/users/${owner.userId}/memberships`);
  real.membershipId = String(memberships.body.memberships?.[0]?.membershipId ?? randomUUID());
  real.requestId = randomUUID();
  real.notificationId = randomUUID();
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  echo?.closeAllConnections();
  await new Promise<void>((resolve) => (echo ? echo.close(() => resolve()) : resolve()));
});

// ---------------------------------------------------------------- the repros of issue 7
describe("bad input is a 400 naming what is wrong, never a 500", () => {
  const fields = (answer: Answer) => (JSON.parse(answer.text) as { fields?: string[] }).fields;

  it("a malformed escape in a path parameter names the parameter", async () => {
    const answer = await send("GET", "/api/clients/%ZZ", {});
    expect(answer.status, answer.text).toBe(400);
    expect(fields(answer)).toEqual(["clientId"]);
    const deeper = await send("GET", `/api/clients/${real.clientId}/proxies/%E0%A4%A`, {});
    expect(deeper.status, deeper.text).toBe(400);
    expect(fields(deeper)).toEqual(["proxyId"]);
  });

  it("dot segments are a proxy id, never the parent: DELETE .../proxies/%2e%2e leaves the client alone", async () => {
    const other = await stack.newUser();
    const clientId = await createClientFor(other, "Dots Co");
    for (const dots of ["%2e%2e", "%2E%2e", ".."]) {
      const answer = await new Promise<Answer>((resolve, reject) => {
        const url = new URL(stack.baseUrl);
        const req = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            method: "DELETE",
            path: `/api/clients/${clientId}/proxies/${dots}`,
            headers: { authorization: other.token },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () =>
              resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
            );
          },
        );
        req.on("error", reject);
        req.end();
      });
      expect(answer.status, `${dots}: ${answer.text}`).toBe(404);
    }
    const client = await other.api.get(`/api/clients/${clientId}`);
    expect(client.status).toBe(200);
    expect(client.body.clients[0].clientDeleted ?? false).toBe(false);
  });

  it("proxyAdditionalData nested 300 and 10,000 deep names the field", async () => {
    const base = `/api/clients/${real.clientId}/proxies/${real.proxyId}`;
    for (const levels of [300, 10_000]) {
      const answer = await send(
        "PUT",
        base,
        { "content-type": "application/json" },
        `{"proxyAdditionalData":${deep(levels)}}`,
      );
      expect(answer.status, answer.text.slice(0, 300)).toBe(400);
      expect(fields(answer)).toEqual(["proxyAdditionalData"]);
    }
    // 32 levels in all is the most DynamoDB stores: the body is level 1.
    const ok = await send(
      "PUT",
      base,
      { "content-type": "application/json" },
      `{"proxyAdditionalData":${deep(31)}}`,
    );
    expect(ok.status, ok.text.slice(0, 300)).toBe(200);
  });

  it("proxyAdditionalData that DynamoDB could not store or give back is a 400; the proxy stays readable", async () => {
    const base = `/api/clients/${real.clientId}/proxies/${real.proxyId}`;
    const json = { "content-type": "application/json" };
    // An empty key was stored and then every read of the proxy failed; big integers failed to marshal.
    for (const [data, field] of [
      ['{"a":{"":1}}', "proxyAdditionalData.a"],
      ['{"":1}', "proxyAdditionalData"],
      ['{"a":9007199254740993}', "proxyAdditionalData.a"],
      ['{"a":[1e300]}', "proxyAdditionalData.a.0"],
      ['{"a":1e-300}', "proxyAdditionalData.a"],
    ] as const) {
      const answer = await send("PUT", base, json, `{"proxyAdditionalData":${data}}`);
      expect(answer.status, `${data}: ${answer.text}`).toBe(400);
      expect(fields(answer), data).toEqual([field]);
    }
    expect((await send("GET", base, {})).status).toBe(200);
    const ok = await send("PUT", base, json, '{"proxyAdditionalData":{"a":[[]],"n":-0.5,"e":""}}');
    expect(ok.status, ok.text).toBe(200);
    expect((await send("GET", base, {})).status).toBe(200);
  });

  it("a credential-test body nested 10,000 deep names the field", async () => {
    const answer = await send(
      "POST",
      `/api/clients/${real.clientId}/credentials/${real.targetCredentialId}/test`,
      { "content-type": "application/json" },
      `{"targetId":"${real.targetId}","method":"POST","body":${deep(10_000)}}`,
    );
    expect(answer.status, answer.text.slice(0, 300)).toBe(400);
    expect(fields(answer)).toEqual(["body"]);
  });

  it("a lone surrogate in a name, a key or a pattern names the field", async () => {
    const base = `/api/clients/${real.clientId}`;
    const json = { "content-type": "application/json" };
    const cases: [string, string, string, string][] = [
      ["POST", "/api/clients", '{"clientName":"A\\ud800"}', "clientName"],
      ["PUT", base, '{"clientName":"\\udc00"}', "clientName"],
      ["PUT", `/api/users/${owner.userId}`, '{"userFirstName":"\\ud800"}', "userFirstName"],
      ["PUT", `${base}/credentials/${real.credentialId}`, '{"credentialName":"\\ud800"}', "credentialName"],
      ["PUT", `${base}/targets/${real.targetId}`, '{"targetName":"\\ud800"}', "targetName"],
      ["PUT", `${base}/proxies/${real.proxyId}`, '{"proxyName":"\\ud800"}', "proxyName"],
      [
        "POST",
        `${base}/proxies/${real.proxyId}/rules`,
        '{"effect":"deny","priority":1,"pathPattern":"\\ud800"}',
        "pathPattern",
      ],
      [
        "PUT",
        `${base}/proxies/${real.proxyId}`,
        '{"proxyAdditionalData":{"\\ud800":1}}',
        "proxyAdditionalData",
      ],
    ];
    for (const [method, path, body, field] of cases) {
      const answer = await send(method, path, json, body);
      expect(answer.status, `${method} ${path}: ${answer.text}`).toBe(400);
      expect(fields(answer), `${method} ${path}`).toEqual([field]);
    }
  });

  it("prototype names in the query string and headers are data", async () => {
    for (const query of ["constructor=1", "__proto__=1", "toString=1", "hasOwnProperty=1"]) {
      const answer = await send("GET", `/api/clients/${real.clientId}?${query}`, {});
      expect(answer.status, `${query}: ${answer.text}`).toBe(200);
    }
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      const answer = await send("GET", `/api/clients/${real.clientId}`, { [name]: "1" });
      expect(answer.status, `${name}: ${answer.text}`).toBe(200);
    }
  });
});

// ---------------------------------------------------------------- the fuzz
describe("fuzz: every route × a fixed corpus of bad inputs", () => {
  it("never answers 5xx", { timeout: 120_000 }, async () => {
    const cases = generateCases();
    const started = Date.now();
    // Requests that may delete a fixture go last, in order: the others first, in parallel.
    const answers: Answer[] = [];
    for (const order of [0, 1, 2, 3]) {
      const batch = cases.filter((c) => c.order === order);
      answers.push(
        ...(await pool(batch, order === 0 ? CONCURRENCY : 2, (c) =>
          send(c.method, c.path, c.headers, c.body),
        )),
      );
    }
    const seconds = (Date.now() - started) / 1000;

    const byStatus = new Map<number, number>();
    const byKind = new Map<string, number>();
    const failures: string[] = [];
    cases.forEach((c, i) => {
      const answer = answers[i] as Answer;
      byStatus.set(answer.status, (byStatus.get(answer.status) ?? 0) + 1);
      byKind.set(c.kind, (byKind.get(c.kind) ?? 0) + 1);
      if (answer.status < 500) return;
      const body =
        typeof c.body === "string" ? c.body.slice(0, 160) : c.body ? `<${c.body.length} bytes>` : "";
      const line = `${answer.status} ${c.method} ${c.path.slice(0, 160)} [${c.kind}] headers=${JSON.stringify(c.headers).slice(0, 80)} body=${body}`;
      failures.push(line);
    });
    const routes = new Set(cases.map((c) => c.route)).size;
    process.stdout.write(
      `fuzz: ${cases.length} requests over ${routes} routes in ${seconds.toFixed(1)} s; ` +
        `by kind ${JSON.stringify(Object.fromEntries(byKind))}; ` +
        `by status ${JSON.stringify(Object.fromEntries([...byStatus].sort((a, b) => a[0] - b[0])))}; ` +
        `5xx: ${failures.length}\n`,
    );
    expect(routes).toBe(CORE_API_ROUTES.length);
    expect(failures, failures.join("\n")).toEqual([]);
  });
});
