/**
 * The transforms API (spec 2.10, 4.10; docs/transforms.md) over real HTTP against the local
 * stack: CRUD of both kinds with TypeScript and JavaScript, each code rule as a 400 with the exact
 * body, the 512 KB incompressible round-trip (chunked storage) and the refusal above it, a PUT
 * with invalid code keeping the old code, lists without code, roles, tenant isolation, the
 * configVersion bump and the proxy cascade.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { transformKeys } from "#lib/db/entities/transform.ts";
import { keys } from "#lib/db/keys.ts";
import { queryPartition } from "#lib/db/store.ts";
import { MAX_TRANSFORM_CODE_BYTES } from "#lib/domain/transforms/code.ts";
import { MAX_TRANSFORMS_PER_PROXY } from "#lib/shared/transform-constants.ts";
import {
  createClientFor,
  created,
  createProxyParts,
  joinClient,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";
import { codeOfBytes } from "../support/transform-code.ts";

const US = "us-east-1";
const EU = "eu-west-1";

let stack: TestStack;
let owner: TestUser;
let clientId: string;

beforeAll(async () => {
  stack = await startTestStack();
});
beforeEach(async () => {
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Transforms Co");
});
afterAll(async () => {
  await stack?.stop();
});

const clientPath = (id = clientId) => `/api/clients/${id}`;

async function proxyIn(region = US, user = owner, id = clientId): Promise<string> {
  const parts = await createProxyParts(user, id, {
    region,
    key: "caller-key-value-1234",
    targetBaseURL: "https://api.example.test/v1",
  });
  const proxy = await created(
    user.api.post(`${clientPath(id)}/proxies`, {
      proxyName: "Transformed",
      proxyRegion: region,
      proxyProxyCredentialId: parts.proxyCredentialId,
      proxyTargetId: parts.targetId,
      proxyTargetCredentialId: parts.targetCredentialId,
    }),
    "proxies",
  );
  return proxy.proxyId as string;
}

type Kind = "request" | "response";
const wrapperOf = (kind: Kind) => (kind === "request" ? "requestTransforms" : "responseTransforms");
const basePath = (proxyId: string, kind: Kind = "request", id = clientId) =>
  `${clientPath(id)}/proxies/${proxyId}/${kind}-transforms`;

const JS = "export default function (context, request) {\n  return request\n}\n";
const TS = [
  "interface Req { headers: Record<string, string> }",
  "export default async function (context: unknown, request: Req): Promise<Req> {",
  "  const tag: string = 'yes';",
  "  return { ...request, headers: { ...request.headers, 'x-tag': tag } };",
  "}",
].join("\n");
const MINIMAL = { transformMode: "all", transformActive: true, code: JS };

async function createTransform(
  proxyId: string,
  body: Record<string, unknown> = MINIMAL,
  kind: Kind = "request",
  user = owner,
) {
  const response = await user.api.post(basePath(proxyId, kind), body);
  expect(response.status, JSON.stringify(response.body).slice(0, 500)).toBe(201);
  return response.body[wrapperOf(kind)][0] as Record<string, any>;
}

const configVersion = async (region = US) =>
  Number((await storedItem(keys.clientRuntime(clientId), region))?.configVersion ?? 0);

/** Every stored item of a transform (the item and its code chunks). */
async function storedParts(kind: Kind, proxyId: string, transformId: string, region = US) {
  const key = transformKeys.item(clientId, kind, proxyId, transformId);
  return queryPartition(key.pKey, { region, sKeyPrefix: key.sKey });
}

const codeFailure = (...errors: string[]) => ({ message: "Transform code failed validation", errors });

describe("CRUD", () => {
  it("creates a TypeScript request transform, gets it with its code, lists it without, updates partially and deletes it", async () => {
    const proxyId = await proxyIn(EU);
    const made = await createTransform(proxyId, { ...MINIMAL, code: TS, priority: 7, notes: "tag" });
    expect(made).toMatchObject({
      pKey: proxyId,
      parentId: proxyId,
      proxyId,
      clientId,
      userId: owner.userId,
      transformRegion: EU,
      transformMode: "all",
      effect: null,
      transformActive: true,
      priority: 7,
      methods: [],
      path: null,
      query: [],
      headers: [],
      body: [],
      token: [],
      variables: [],
      notes: "tag",
      code: TS,
    });
    expect(made.sKey).toBe(made.transformId);
    for (const internal of [
      "entity",
      "transformVersion",
      "codeGzip",
      "codeChunks",
      "codeVersion",
      "responseStatus",
    ])
      expect(made).not.toHaveProperty(internal);
    const one = `${basePath(proxyId)}/${made.transformId}`;

    expect((await owner.api.get(one)).body.requestTransforms).toEqual([made]);
    const listed = (await owner.api.get(basePath(proxyId))).body.requestTransforms;
    const { code: _code, ...metadata } = made;
    expect(listed).toEqual([metadata]);
    // The other kind is a separate list.
    expect((await owner.api.get(basePath(proxyId, "response"))).body.responseTransforms).toEqual([]);

    const updated = await owner.api.put(one, {
      transformMode: "conditional",
      effect: "include",
      methods: ["post"],
      notes: null,
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.requestTransforms[0]).toMatchObject({
      transformMode: "conditional",
      effect: "include",
      methods: ["POST"],
      notes: "",
      priority: 7,
      code: TS,
    });
    const recoded = await owner.api.put(one, { code: JS });
    expect(recoded.body.requestTransforms[0].code).toBe(JS);
    expect((await owner.api.get(one)).body.requestTransforms[0].code).toBe(JS);

    expect((await owner.api.delete(one)).body).toEqual({ message: "Request transform deleted" });
    expect((await owner.api.get(one)).status).toBe(404);
    expect(await storedParts("request", proxyId, made.transformId, EU)).toEqual([]);
    expect((await owner.api.delete(one)).status).toBe(404);
  });

  it("a response transform carries the response predicates; a request transform refuses them", async () => {
    const proxyId = await proxyIn();
    const made = await createTransform(
      proxyId,
      {
        ...MINIMAL,
        code: "export default (context, request, response) => response",
        transformMode: "conditional",
        effect: "exclude",
        responseHeaders: [{ name: "Content-Type", pattern: "json" }],
        responseBody: [{ path: "data.id", presence: "present" }],
        responseStatus: [
          { operator: "gte", value: 200 },
          { operator: "lt", value: 300 },
        ],
      },
      "response",
    );
    expect(made).toMatchObject({
      responseHeaders: [{ name: "content-type", pattern: "json", presence: "present" }],
      responseBody: [{ path: "data.id", presence: "present" }],
      responseStatus: [
        { operator: "gte", value: 200 },
        { operator: "lt", value: 300 },
      ],
    });
    const one = `${basePath(proxyId, "response")}/${made.transformId}`;
    expect((await owner.api.get(one)).body.responseTransforms).toEqual([made]);
    const cleared = await owner.api.put(one, { responseStatus: null });
    expect(cleared.body.responseTransforms[0].responseStatus).toEqual([]);
    expect((await owner.api.get(`${basePath(proxyId, "request")}/${made.transformId}`)).status).toBe(404);

    const refused = await owner.api.post(basePath(proxyId), { ...MINIMAL, responseStatus: [] });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain("responseStatus");
    const badStatus = await owner.api.post(basePath(proxyId, "response"), {
      ...MINIMAL,
      responseStatus: [{ operator: "between", value: 200 }],
    });
    expect(badStatus.status).toBe(400);
    expect(badStatus.body.fields).toEqual(["responseStatus.0.operator"]);
  });

  it("refuses missing required fields, a conditional transform without effect, and a bad priority, naming the field", async () => {
    const proxyId = await proxyIn();
    const refused = async (body: Record<string, unknown>) => {
      const response = await owner.api.post(basePath(proxyId), body);
      expect(response.status, JSON.stringify(response.body)).toBe(400);
      return response.body.fields;
    };
    expect(await refused({ transformActive: true, code: JS })).toEqual(["transformMode"]);
    expect(await refused({ transformMode: "all", code: JS })).toEqual(["transformActive"]);
    expect(await refused({ transformMode: "all", transformActive: true })).toEqual(["code"]);
    expect(await refused({ ...MINIMAL, transformMode: "conditional" })).toEqual(["effect"]);
    expect(await refused({ ...MINIMAL, priority: 1001 })).toEqual(["priority"]);
  });

  it(`bounds each kind at ${MAX_TRANSFORMS_PER_PROXY} per proxy`, async () => {
    const proxyId = await proxyIn();
    await Promise.all(Array.from({ length: MAX_TRANSFORMS_PER_PROXY }, () => createTransform(proxyId)));
    const over = await owner.api.post(basePath(proxyId), MINIMAL);
    expect(over.status).toBe(400);
    expect(over.body.message).toContain(`at most ${MAX_TRANSFORMS_PER_PROXY} request transforms`);
    // The other kind has its own bound.
    await createTransform(proxyId, MINIMAL, "response");
    expect((await owner.api.get(basePath(proxyId))).body.requestTransforms).toHaveLength(
      MAX_TRANSFORMS_PER_PROXY,
    );
  });
});

describe("code rules", () => {
  it("answers each refused code with 400 and exactly {message, errors}, line and column per problem", async () => {
    const proxyId = await proxyIn();
    const cases: [string, string[]][] = [
      [
        "export default function (c, r) {\n  let x = ;\n}",
        ["Line 2, column 11: syntax error: Unexpected token"],
      ],
      [
        "export function run(c, r) { return r }",
        [
          "Line 1, column 1: no default export: the code must export a function (export default function (context, ...) {...})",
        ],
      ],
      [
        "export default { run: 1 }",
        [
          "Line 1, column 16: the default export must be a function (export default function (context, ...) {...})",
        ],
      ],
      [
        "import x from 'y'\nexport default () => x",
        ["Line 1, column 1: import declarations are not allowed"],
      ],
      ["export default () => require('fs')", ["Line 1, column 22: require() is not allowed"]],
      ["export default () => import('fs')", ["Line 1, column 22: dynamic import() is not allowed"]],
      ...["process", "fetch", "globalThis", "eval", "Function", "require"].map((name): [string, string[]] => [
        `export default (c) => {\n  return ${name}\n}`,
        [`Line 2, column 10: ${name} is not available in transforms`],
      ]),
      [
        "import a from 'a'\nexport default 1\nfetch(process)",
        [
          "Line 1, column 1: import declarations are not allowed",
          "Line 2, column 16: the default export must be a function (export default function (context, ...) {...})",
          "Line 3, column 1: fetch is not available in transforms",
          "Line 3, column 7: process is not available in transforms",
        ],
      ],
    ];
    for (const [code, errors] of cases) {
      const response = await owner.api.post(basePath(proxyId), { ...MINIMAL, code });
      expect(response.status, code).toBe(400);
      expect(response.body, code).toEqual(codeFailure(...errors));
    }
    // The same rules for response transforms, and nothing was stored.
    const response = await owner.api.post(basePath(proxyId, "response"), {
      ...MINIMAL,
      code: "export default eval",
    });
    expect(response.body).toEqual(
      codeFailure(
        "Line 1, column 16: the default export must be a function (export default function (context, ...) {...})",
        "Line 1, column 16: eval is not available in transforms",
      ),
    );
    expect((await owner.api.get(basePath(proxyId))).body.requestTransforms).toEqual([]);
    expect((await owner.api.get(basePath(proxyId, "response"))).body.responseTransforms).toEqual([]);
  });

  it("stores 512 KB of incompressible code whole (chunked) and refuses one byte more, naming code", async () => {
    const proxyId = await proxyIn();
    const code = codeOfBytes(MAX_TRANSFORM_CODE_BYTES);
    const made = await createTransform(proxyId, { ...MINIMAL, code }, "response");
    expect(made.code).toBe(code);
    const one = `${basePath(proxyId, "response")}/${made.transformId}`;
    expect((await owner.api.get(one)).body.responseTransforms[0].code).toBe(code);
    const parts = await storedParts("response", proxyId, made.transformId);
    expect(parts.filter((item) => item.entity === "transform-code").length).toBeGreaterThanOrEqual(2);
    const head = parts.find((item) => item.entity === "transform");
    expect(head).toMatchObject({ codeBytes: MAX_TRANSFORM_CODE_BYTES });
    expect(head?.codeGzip).toBeUndefined();

    const over = await owner.api.post(basePath(proxyId), {
      ...MINIMAL,
      code: codeOfBytes(MAX_TRANSFORM_CODE_BYTES + 1),
    });
    expect(over.status).toBe(400);
    expect(over.body.fields).toEqual(["code"]);

    // Back to small code: the item holds it inline and the chunks are gone.
    const small = await owner.api.put(one, { code: JS });
    expect(small.body.responseTransforms[0].code).toBe(JS);
    const after = await storedParts("response", proxyId, made.transformId);
    expect(after.map((item) => item.entity)).toEqual(["transform"]);
    expect((await owner.api.get(one)).body.responseTransforms[0].code).toBe(JS);
  });

  it("a PUT with invalid code answers 400 and keeps the old code (and the configuration version)", async () => {
    const proxyId = await proxyIn();
    const made = await createTransform(proxyId, { ...MINIMAL, code: TS });
    const one = `${basePath(proxyId)}/${made.transformId}`;
    const before = await configVersion();
    const refused = await owner.api.put(one, {
      code: "export default () => fetch('https://x')",
      priority: 9,
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual(codeFailure("Line 1, column 22: fetch is not available in transforms"));
    expect((await owner.api.get(one)).body.requestTransforms).toEqual([made]);
    expect(await configVersion()).toBe(before);
  });
});

describe("access", () => {
  it("a reader reads transforms and cannot write them; devops can", async () => {
    const proxyId = await proxyIn();
    const made = await createTransform(proxyId);
    const one = `${basePath(proxyId)}/${made.transformId}`;
    const [reader, devops] = await Promise.all([stack.newUser(), stack.newUser()]);
    await joinClient(owner, clientId, reader, "reader");
    await joinClient(owner, clientId, devops, "devops");

    expect((await reader.api.get(basePath(proxyId))).status).toBe(200);
    expect((await reader.api.get(one)).body.requestTransforms[0].code).toBe(JS);
    expect((await reader.api.post(basePath(proxyId), MINIMAL)).status).toBe(403);
    expect((await reader.api.put(one, { transformActive: false })).status).toBe(403);
    expect((await reader.api.delete(one)).status).toBe(403);

    const byDevops = await createTransform(proxyId, MINIMAL, "request", devops);
    expect(byDevops.userId).toBe(devops.userId);
    expect((await devops.api.put(one, { transformActive: false })).status).toBe(200);
    expect((await devops.api.delete(one)).status).toBe(200);
  });

  it("another organisation's ids answer 403 or 404, and its transforms are untouched", async () => {
    const proxyId = await proxyIn();
    const made = await createTransform(proxyId);
    const one = `${basePath(proxyId)}/${made.transformId}`;
    const intruder = await stack.newUser();
    const intruderClient = await createClientFor(intruder, "Intruder Co");
    const intruderProxy = await proxyIn(US, intruder, intruderClient);
    for (const answer of await Promise.all([
      intruder.api.get(basePath(proxyId)),
      intruder.api.get(one),
      intruder.api.post(basePath(proxyId), MINIMAL),
      intruder.api.put(one, { transformActive: false }),
      intruder.api.delete(one),
    ]))
      expect([403, 404]).toContain(answer.status);
    const own = `${basePath(intruderProxy, "request", intruderClient)}/${made.transformId}`;
    expect((await intruder.api.get(basePath(proxyId, "request", intruderClient))).status).toBe(404);
    expect((await intruder.api.get(own)).status).toBe(404);
    expect((await intruder.api.put(own, { transformActive: false })).status).toBe(404);
    expect((await intruder.api.delete(own)).status).toBe(404);
    expect((await owner.api.get(one)).body.requestTransforms).toEqual([made]);
  });
});

describe("configuration version and cascade", () => {
  it("every change bumps the client's configVersion in the proxy's region", async () => {
    const proxyId = await proxyIn(EU);
    const before = await configVersion(EU);
    const made = await createTransform(proxyId);
    const afterCreate = await configVersion(EU);
    expect(afterCreate).toBeGreaterThan(before);
    await owner.api.put(`${basePath(proxyId)}/${made.transformId}`, { priority: 3 });
    const afterUpdate = await configVersion(EU);
    expect(afterUpdate).toBeGreaterThan(afterCreate);
    await owner.api.delete(`${basePath(proxyId)}/${made.transformId}`);
    expect(await configVersion(EU)).toBeGreaterThan(afterUpdate);
  });

  it("deleting the proxy deletes its transforms, their code chunks and counts", async () => {
    const proxyId = await proxyIn();
    const big = await createTransform(proxyId, { ...MINIMAL, code: codeOfBytes(400 * 1024) }, "response");
    const small = await createTransform(proxyId);
    expect((await storedParts("response", proxyId, big.transformId)).length).toBeGreaterThan(1);
    expect((await owner.api.delete(`${clientPath()}/proxies/${proxyId}`)).status).toBe(200);
    expect(await storedParts("response", proxyId, big.transformId)).toEqual([]);
    expect(await storedParts("request", proxyId, small.transformId)).toEqual([]);
    expect(await storedItem(transformKeys.count(clientId, "request", proxyId), US)).toBeUndefined();
    expect(await storedItem(transformKeys.count(clientId, "response", proxyId), US)).toBeUndefined();
    expect((await owner.api.get(basePath(proxyId))).status).toBe(404);
  });
});
