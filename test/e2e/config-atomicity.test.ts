/**
 * Configuration changes are atomic with the client's configVersion (issue 20, lib/db/commit.ts):
 * - the check itself (test/support/config-atomicity.ts, which every e2e file runs through its test
 *   stack) recognises a configuration write without the version step;
 * - every registry operation that writes regional configuration moves the version in the same
 *   transaction (the table below must name each of them: a new write operation fails this file
 *   until it is added);
 * - while a warm data plane serves a proxy, a change that must stop traffic (proxy deactivated,
 *   credential deleted, deny rule added) is refused on the very next request, and when the store
 *   fails during the change, what the API answered, what the store holds and what the data plane
 *   serves agree (before issue 20 the change committed, the separate version write failed, the
 *   API answered 500 and the warm data plane kept serving the change's old configuration).
 */
import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { OPERATIONS } from "#lib/api/registry.ts";
import { dynamo } from "#lib/aws/clients.ts";
import { PutCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import {
  type MiddlewareStack,
  offendingWrites,
  seedingConfig,
  updatedAttributes,
  watchConfigWrites,
} from "../support/config-atomicity.ts";
import { listenWithBody } from "../support/loopback.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  createProxyParts,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
let stack: TestStack;
let owner: TestUser;
let clientId: string;
let targetBase: string;
const servers: Server[] = [];

beforeAll(async () => {
  targetBase = await listenWithBody((_req, _body, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"ok":true}');
  }, servers);
  stack = await startTestStack();
});
// A user (and client) per test: the scenarios make many calls, more than one token's minute allows.
beforeEach(async () => {
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Atomic Co");
});
afterAll(async () => {
  await stack?.stop();
  for (const server of servers) server.close();
});

const api = () => `/api/clients/${clientId}`;
const S = (value: string) => ({ S: value });

/** The client's configuration version in a region, as stored. */
async function versionOf(region = US): Promise<number> {
  const item = await storedItem(keys.clientRuntime(clientId), region);
  return typeof item?.configVersion === "number" ? item.configVersion : 0;
}

describe("the check", () => {
  const proxyKey = { pKey: S("CLIENT#c1"), sKey: S("PROXY#p1") };
  const runtimeKey = { pKey: S("CLIENT#c1"), sKey: S("RUNTIME") };

  it("flags a configuration item written outside a transaction, or in one without the version step", () => {
    expect(
      offendingWrites("UpdateItemCommand", { Key: proxyKey, UpdateExpression: "SET proxyActive = :f" }),
    ).toHaveLength(1);
    expect(offendingWrites("PutItemCommand", { Item: { ...proxyKey, entity: S("proxy") } })).toHaveLength(1);
    expect(offendingWrites("DeleteItemCommand", { Key: proxyKey })).toHaveLength(1);
    expect(
      offendingWrites("TransactWriteItemsCommand", {
        TransactItems: [{ Update: { Key: proxyKey, UpdateExpression: "SET proxyActive = :f" } }],
      }),
    ).toHaveLength(1);
    // The version of another client does not count.
    expect(
      offendingWrites("TransactWriteItemsCommand", {
        TransactItems: [
          { Delete: { Key: proxyKey } },
          {
            Update: {
              Key: { pKey: S("CLIENT#c2"), sKey: S("RUNTIME") },
              UpdateExpression: "ADD configVersion :one",
            },
          },
        ],
      }),
    ).toHaveLength(1);
  });

  it("accepts the change with its version step, other items, and the data plane's own state", () => {
    expect(
      offendingWrites("TransactWriteItemsCommand", {
        TransactItems: [
          { Delete: { Key: proxyKey } },
          { Delete: { Key: { pKey: S("PROXYRT#p1"), sKey: S("RUNTIME") } } },
          { Update: { Key: runtimeKey, UpdateExpression: "ADD configVersion :one SET clientId = :c" } },
        ],
      }),
    ).toEqual([]);
    expect(
      offendingWrites("UpdateItemCommand", { Key: runtimeKey, UpdateExpression: "ADD configVersion :one" }),
    ).toEqual([]);
    expect(offendingWrites("PutItemCommand", { Item: { pKey: S("REQLOG#p1"), sKey: S("0190") } })).toEqual(
      [],
    );
    expect(
      offendingWrites("UpdateItemCommand", {
        Key: { pKey: S("CLIENT#c1"), sKey: S("CREDENTIAL#k1") },
        UpdateExpression: "SET usedAt = :now",
      }),
    ).toEqual([]);
    // ...but not the data plane's state together with configuration.
    expect(
      offendingWrites("UpdateItemCommand", {
        Key: { pKey: S("CLIENT#c1"), sKey: S("CREDENTIAL#k1") },
        UpdateExpression: "SET usedAt = :now, #n = :name",
        ExpressionAttributeNames: { "#n": "credentialName" },
      }),
    ).toHaveLength(1);
  });

  it("reads the attributes an update expression writes", () => {
    expect(
      updatedAttributes("SET #a = if_not_exists(#a, :z), b.c = :v ADD n :one REMOVE d, e[0]", {
        "#a": "alpha",
      }),
    ).toEqual(["alpha", "b", "d", "e", "n"]);
  });

  it("records a configuration write made without the version step against the emulator", async () => {
    // A stray write of the kind a forgotten path would make. It is marked as seeding for the stack's
    // own watcher (which would otherwise fail this file); this watcher looks through that mark.
    const watch = watchConfigWrites({ seeing: "everything" });
    try {
      await seedingConfig(() =>
        dynamo(US).send(
          new PutCommand({
            TableName: stack.config.tableName,
            Item: { ...keys.proxy(`stray-${randomUUID()}`, "p"), entity: "stray" },
          }),
        ),
      );
    } finally {
      watch.stop();
    }
    expect(watch.offences).toHaveLength(1);
    expect(watch.offences[0]).toMatch(/PutItem of a configuration item outside a transaction: CLIENT#/);
  });
});

/** Registry operations that write a client's regional configuration. */
const CONFIG_GROUPS = new Set(["credentials", "targets", "proxies", "rules", "meters", "transforms"]);
/** Operations of those groups that read only (they call a target with a credential). */
const READS_ONLY = new Set(["testCredential", "testCredentialToken"]);
const CONFIG_WRITES = OPERATIONS.filter(
  (operation) =>
    CONFIG_GROUPS.has(operation.group) && operation.method !== "GET" && !READS_ONLY.has(operation.id),
).map((operation) => operation.id);

interface Resources {
  proxyCredentialId: string;
  targetCredentialId: string;
  targetId: string;
  proxyId: string;
  key: string;
}

async function newResources(): Promise<Resources> {
  const key = `k-${randomUUID()}`;
  const parts = await createProxyParts(owner, clientId, { region: US, key, targetBaseURL: targetBase });
  const proxy = await created(
    owner.api.post(`${api()}/proxies`, {
      proxyName: "p",
      proxyRegion: US,
      proxyProxyCredentialId: parts.proxyCredentialId,
      proxyTargetId: parts.targetId,
      proxyTargetCredentialId: parts.targetCredentialId,
    }),
    "proxies",
  );
  return { ...parts, proxyId: proxy.proxyId, key };
}

type Call = (r: Resources) => Promise<{ status: number; body: Record<string, any> }>;
const JS = "export default function (context, request) {\n  return request\n}\n";
const TRANSFORM = { transformMode: "all", transformActive: true, code: JS };

/** One call of each configuration write, on fresh resources (ids made by a call before it when needed). */
const SCENARIOS: Record<string, Call> = {
  createCredential: () =>
    owner.api.post(`${api()}/credentials`, {
      credentialName: "c",
      credentialType: "proxy",
      authType: "apiKey",
      region: US,
      secret: { keyName: "x-api-key", keyValue: randomUUID() },
    }),
  updateCredential: (r) =>
    owner.api.put(`${api()}/credentials/${r.proxyCredentialId}`, { credentialName: "renamed" }),
  deleteCredential: (r) => owner.api.delete(`${api()}/credentials/${r.proxyCredentialId}`),
  createTarget: () =>
    owner.api.post(`${api()}/targets`, {
      targetName: "t",
      targetRegion: US,
      targetBaseURL: targetBase,
      targetTestPath: "/",
    }),
  updateTarget: (r) => owner.api.put(`${api()}/targets/${r.targetId}`, { targetName: "renamed" }),
  deleteTarget: (r) => owner.api.delete(`${api()}/targets/${r.targetId}`),
  createProxy: (r) =>
    owner.api.post(`${api()}/proxies`, {
      proxyName: "second",
      proxyRegion: US,
      proxyProxyCredentialId: r.proxyCredentialId,
      proxyTargetId: r.targetId,
      proxyTargetCredentialId: r.targetCredentialId,
    }),
  updateProxy: (r) => owner.api.put(`${api()}/proxies/${r.proxyId}`, { proxyActive: false }),
  deleteProxy: (r) => owner.api.delete(`${api()}/proxies/${r.proxyId}`),
  ...Object.fromEntries(
    (["credentials", "proxies", "targets"] as const).flatMap((parent) => {
      const name = parent === "credentials" ? "Credential" : parent === "proxies" ? "Proxy" : "Target";
      const idOf = (r: Resources) =>
        parent === "credentials" ? r.proxyCredentialId : parent === "proxies" ? r.proxyId : r.targetId;
      const rule = { effect: "deny", priority: 1, methods: ["DELETE"] };
      return [
        [`create${name}Rule`, (r: Resources) => owner.api.post(`${api()}/${parent}/${idOf(r)}/rules`, rule)],
        [
          `delete${name}Rule`,
          async (r: Resources) => {
            const made = await created(owner.api.post(`${api()}/${parent}/${idOf(r)}/rules`, rule), "rules");
            return owner.api.delete(`${api()}/${parent}/${idOf(r)}/rules/${made.ruleId}`);
          },
        ],
      ];
    }),
  ),
  createMeter: (r) =>
    owner.api.post(`${api()}/proxies/${r.proxyId}/meters`, { meterType: "request_count", meterActive: true }),
  updateMeter: async (r) => {
    const meter = await created(
      owner.api.post(`${api()}/proxies/${r.proxyId}/meters`, {
        meterType: "request_count",
        meterActive: true,
      }),
      "meters",
    );
    return owner.api.put(`${api()}/proxies/${r.proxyId}/meters/${meter.meterId}`, { meterActive: false });
  },
  deleteMeter: async (r) => {
    const meter = await created(
      owner.api.post(`${api()}/proxies/${r.proxyId}/meters`, {
        meterType: "request_count",
        meterActive: true,
      }),
      "meters",
    );
    return owner.api.delete(`${api()}/proxies/${r.proxyId}/meters/${meter.meterId}`);
  },
  ...Object.fromEntries(
    (["request", "response"] as const).flatMap((kind) => {
      const name = kind === "request" ? "Request" : "Response";
      const path = (r: Resources) => `${api()}/proxies/${r.proxyId}/${kind}-transforms`;
      const make = async (r: Resources) => created(owner.api.post(path(r), TRANSFORM), `${kind}Transforms`);
      return [
        [`create${name}Transform`, (r: Resources) => owner.api.post(path(r), TRANSFORM)],
        [
          `update${name}Transform`,
          async (r: Resources) => owner.api.put(`${path(r)}/${(await make(r)).transformId}`, { priority: 3 }),
        ],
        [
          `delete${name}Transform`,
          async (r: Resources) => owner.api.delete(`${path(r)}/${(await make(r)).transformId}`),
        ],
      ];
    }),
  ),
  updateProxyFilters: (r) =>
    owner.api.put(`${api()}/proxies/${r.proxyId}/filters`, { ipDeny: ["10.0.0.0/8"] }),
  deleteProxyFilters: (r) => owner.api.delete(`${api()}/proxies/${r.proxyId}/filters`),
  updateProxyOverrides: (r) =>
    owner.api.put(`${api()}/proxies/${r.proxyId}/overrides`, {
      pathOverrides: [{ pathPrefix: "/slow", timeoutSeconds: 5 }],
    }),
  deleteProxyOverrides: (r) => owner.api.delete(`${api()}/proxies/${r.proxyId}/overrides`),
};

describe("every registry operation that writes configuration", () => {
  it("is in this file's table (a new one must be added)", () => {
    expect(Object.keys(SCENARIOS).sort()).toEqual([...CONFIG_WRITES].sort());
  });

  it.each(CONFIG_WRITES)("%s moves the version in the same transaction as its change", async (id) => {
    const scenario = SCENARIOS[id];
    if (!scenario) throw new Error(`No scenario for ${id}`);
    const resources = await newResources();
    const watch = watchConfigWrites();
    const before = await versionOf();
    try {
      const answer = await scenario(resources);
      expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
    } finally {
      watch.stop();
    }
    expect(watch.offences).toEqual([]);
    expect(await versionOf()).toBeGreaterThan(before);
  });
});

/**
 * Make the next write of this client's runtime item fail, as a store failure would: either the
 * separate version write (before issue 20) or the change's own transaction (since). Returns how
 * many writes it failed.
 */
function failNextVersionWrite() {
  const name = `fail-version-${randomUUID()}`;
  let failed = 0;
  const writesRuntime = (input: Record<string, any>) => {
    const isOurs = (key: Record<string, any> | undefined) =>
      (key?.pKey?.S ?? key?.pKey) === `CLIENT#${clientId}` && (key?.sKey?.S ?? key?.sKey) === "RUNTIME";
    if (isOurs(input.Key) && input.UpdateExpression) return true;
    return ((input.TransactItems ?? []) as Record<string, any>[]).some((action) =>
      isOurs(action.Update?.Key),
    );
  };
  const middleware = (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
    const input = (args as { input?: Record<string, any> }).input ?? {};
    if (failed === 0 && writesRuntime(input)) {
      failed++;
      const error = new Error("Injected store failure");
      error.name = "InternalServerError";
      throw error;
    }
    return next(args);
  };
  const stack = dynamo(US).middlewareStack as unknown as MiddlewareStack;
  stack.add(middleware, { step: "initialize", name });
  return {
    failed: () => failed,
    stop: () => stack.remove(name),
  };
}

interface StoppingChange {
  name: string;
  change: (r: Resources) => Promise<{ status: number }>;
  /** True when the store holds the change. */
  stored: (r: Resources) => Promise<boolean>;
}

const CHANGES: StoppingChange[] = [
  {
    name: "a proxy deactivated",
    change: (r) => owner.api.put(`${api()}/proxies/${r.proxyId}`, { proxyActive: false }),
    stored: async (r) => (await storedItem(keys.proxy(clientId, r.proxyId), US))?.proxyActive === false,
  },
  {
    name: "its proxy credential deleted",
    change: (r) => owner.api.delete(`${api()}/credentials/${r.proxyCredentialId}`),
    stored: async (r) => {
      const item = await storedItem(keys.credential(clientId, r.proxyCredentialId), US);
      return item === undefined || item.deletingAt !== undefined;
    },
  },
  {
    name: "a deny rule added",
    change: (r) =>
      owner.api.post(`${api()}/proxies/${r.proxyId}/rules`, {
        effect: "deny",
        priority: 100,
        methods: ["GET"],
      }),
    stored: async (r) => (await owner.api.get(`${api()}/proxies/${r.proxyId}/rules`)).body.rules.length > 0,
  },
];

const serve = (r: Resources) =>
  callDataPlane(`${stack.regions[US]}/api/${r.proxyId}/resource`, { headers: { "x-api-key": r.key } });

describe("a change that must stop traffic, while a warm data plane serves the proxy", () => {
  it.each(CHANGES)("$name: the very next request is refused", async ({ change, stored }) => {
    const r = await newResources();
    expect((await serve(r)).status).toBe(200);
    expect((await serve(r)).status).toBe(200);
    expect((await change(r)).status).toBeLessThan(300);
    expect(await stored(r)).toBe(true);
    expect((await serve(r)).status).toBe(403);
  });

  it.each(CHANGES)(
    "$name, the store failing during the change: the answer, the store and the traffic agree",
    async ({ change, stored }) => {
      const r = await newResources();
      expect((await serve(r)).status).toBe(200);
      const fault = failNextVersionWrite();
      let answer: { status: number };
      try {
        answer = await change(r);
      } finally {
        fault.stop();
      }
      expect(fault.failed(), "the injected failure happened").toBe(1);
      const served = (await serve(r)).status;
      if (answer.status < 300) {
        expect(await stored(r)).toBe(true);
        expect(served).toBe(403);
      } else {
        // Refused as a whole: nothing of the change is stored, and the proxy serves as before.
        expect(answer.status).toBeGreaterThanOrEqual(500);
        expect(await stored(r), "the store holds a change the API answered an error for").toBe(false);
        expect(served).toBe(200);
      }
    },
  );
});
