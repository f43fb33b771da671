/**
 * Credentials, targets, proxies and rules (spec 1.10, 4.5-4.8) over real HTTP against the local
 * stack with both regions: validation, the regional rule, cascades (including an interrupted one),
 * roles and tenant isolation. Secrets are searched for in every response and every log line.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { keys } from "#lib/db/keys.ts";
import {
  createClientFor,
  joinClient,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const EU = "eu-west-1";

let stack: TestStack;
let owner: TestUser;
let clientId: string;
const logLines: string[] = [];
const secretsSeen = new Set<string>();
const realStdout = process.stdout.write.bind(process.stdout);
const realStderr = process.stderr.write.bind(process.stderr);

beforeAll(async () => {
  // Capture every log line the in-process handlers write, to search them for secrets.
  process.env.LOG_LEVEL = "debug";
  const capture = (chunk: unknown) => {
    logLines.push(String(chunk));
    return true;
  };
  process.stdout.write = capture as typeof process.stdout.write;
  process.stderr.write = capture as typeof process.stderr.write;
  stack = await startTestStack();
});
// A fresh owner (token) and client per test: each test stays within the basic plan's 100 calls a minute.
beforeEach(async () => {
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Regional Co");
});
afterAll(async () => {
  process.stdout.write = realStdout;
  process.stderr.write = realStderr;
  await stack?.stop();
});

/** A unique secret value, remembered so the final test can search every response and log for it. */
const secretValue = (label: string) => {
  const value = `${label}-${randomUUID()}-SECRET`;
  secretsSeen.add(value);
  return value;
};

const base = (id = clientId) => `/api/clients/${id}`;

async function target(user = owner, overrides: Record<string, unknown> = {}, id = clientId) {
  const response = await user.api.post(`${base(id)}/targets`, {
    targetName: "Echo",
    targetRegion: US,
    targetBaseURL: "https://api.example.test/v1",
    targetTestPath: "/health",
    ...overrides,
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.targets[0] as Record<string, any>;
}

async function credential(
  credentialType: "proxy" | "target",
  overrides: Record<string, unknown> = {},
  user = owner,
  id = clientId,
) {
  const response = await user.api.post(`${base(id)}/credentials`, {
    credentialName: `${credentialType} key`,
    credentialType,
    authType: credentialType === "proxy" ? "apiKey" : "bearer",
    region: US,
    secret:
      credentialType === "proxy"
        ? { keyName: "x-api-key", keyValue: secretValue("proxy") }
        : { token: secretValue("target") },
    ...overrides,
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.credentials[0] as Record<string, any>;
}

async function proxy(overrides: Record<string, unknown> = {}, region = US, user = owner, id = clientId) {
  const [proxyCredential, targetCredential, theTarget] = await Promise.all([
    credential("proxy", { region }, user, id),
    credential("target", { region }, user, id),
    target(user, { targetRegion: region }, id),
  ]);
  const response = await user.api.post(`${base(id)}/proxies`, {
    proxyName: "Main",
    proxyRegion: region,
    proxyProxyCredentialId: proxyCredential.credentialId,
    proxyTargetId: theTarget.targetId,
    proxyTargetCredentialId: targetCredential.credentialId,
    ...overrides,
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return {
    proxy: response.body.proxies[0] as Record<string, any>,
    proxyCredential,
    targetCredential,
    target: theTarget,
  };
}

const expectValidation = (response: { status: number; body: any }, fields: string[]) => {
  expect(response.status, JSON.stringify(response.body)).toBe(400);
  expect(response.body.message).toBe("Input failed data validation");
  expect(response.body.fields).toEqual(fields);
};

describe("targets", () => {
  it("creates a target in the chosen region with the defaults, lists, gets and updates it", async () => {
    const created = await target(owner, { targetRegion: EU, targetName: "Weather" });
    expect(created).toMatchObject({
      pKey: clientId,
      sKey: created.targetId,
      clientId,
      parentId: clientId,
      userId: owner.userId,
      targetName: "Weather",
      targetRegion: EU,
      targetBaseURL: "https://api.example.test/v1",
      targetTestPath: "/health",
      targetDefaultRuleEffect: "allow",
      targetCreatedAt: expect.any(String),
      targetUpdatedAt: expect.any(String),
    });
    // Stored in its region's table only.
    expect(await storedItem(keys.target(clientId, created.targetId), EU)).toBeDefined();
    expect(await storedItem(keys.target(clientId, created.targetId), US)).toBeUndefined();

    const list = await owner.api.get(`${base()}/targets`);
    expect(list.status).toBe(200);
    expect(list.body.targets.map((t: any) => t.targetId)).toContain(created.targetId);
    expect(list.body.pagination).toMatchObject({ page: 1, limit: 20 });

    const got = await owner.api.get(`${base()}/targets/${created.targetId}`);
    expect(got.body.targets).toEqual([created]);

    const updated = await owner.api.put(`${base()}/targets/${created.targetId}`, {
      targetDefaultRuleEffect: "deny",
    });
    expect(updated.status).toBe(200);
    expect(updated.body.targets[0]).toMatchObject({
      targetName: "Weather",
      targetBaseURL: "https://api.example.test/v1",
      targetDefaultRuleEffect: "deny",
      targetRegion: EU,
    });
  });

  it.each([
    [{}, ["targetName", "targetRegion", "targetBaseURL", "targetTestPath"]],
    [{ targetBaseURL: "ftp://example.test" }, ["targetBaseURL"]],
    [{ targetBaseURL: "/relative" }, ["targetBaseURL"]],
    [{ targetBaseURL: "https://user:pass@example.test" }, ["targetBaseURL"]],
    [{ targetTestPath: "https://elsewhere.test/health" }, ["targetTestPath"]],
    [{ targetTestPath: "//elsewhere.test/health" }, ["targetTestPath"]],
    [{ targetRegion: "ap-south-9" }, ["targetRegion"]],
    [{ targetDefaultRuleEffect: "maybe" }, ["targetDefaultRuleEffect"]],
    [{ targetColour: "blue" }, ["targetColour"]],
  ] as [Record<string, unknown>, string[]][])("rejects %j with 400 naming %j", async (overrides, fields) => {
    const body = Object.keys(overrides).length
      ? {
          targetName: "Bad",
          targetRegion: US,
          targetBaseURL: "https://api.example.test",
          targetTestPath: "/health",
          ...overrides,
        }
      : {};
    expectValidation(await owner.api.post(`${base()}/targets`, body), fields);
  });

  it("never changes the region (400 naming targetRegion) and answers 404 for an unknown target", async () => {
    const created = await target();
    expectValidation(await owner.api.put(`${base()}/targets/${created.targetId}`, { targetRegion: EU }), [
      "targetRegion",
    ]);
    const missing = await owner.api.get(`${base()}/targets/${randomUUID()}`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ message: "Target not found" });
  });
});

describe("credentials (the vault)", () => {
  it("stores only ciphertext, bound to the client and credential, and never returns the secret", async () => {
    const value = secretValue("vault");
    const created = await credential("proxy", {
      secret: { keyName: "x-api-key", keyValue: value },
      notes: "first",
      singleUse: true,
    });
    expect(created).toMatchObject({
      pKey: clientId,
      sKey: created.credentialId,
      credentialType: "proxy",
      credentialAuthType: "apiKey",
      credentialRegion: US,
      credentialDefaultRuleEffect: "allow",
      singleUse: true,
      notes: "first",
      clientId,
      userId: owner.userId,
      parentId: clientId,
    });
    expect(JSON.stringify(created)).not.toContain(value);
    expect(created).not.toHaveProperty("secret");
    expect(created).not.toHaveProperty("credentialSecret");
    expect(created).not.toHaveProperty("secretEnvelope");

    const stored = await storedItem(keys.credential(clientId, created.credentialId), US);
    expect(stored?.secretEnvelope).toMatchObject({ alg: "AES-256-GCM" });
    expect(JSON.stringify(stored)).not.toContain(value);
    expect(JSON.stringify(stored)).not.toContain(Buffer.from(value).toString("base64"));

    for (const path of [`${base()}/credentials`, `${base()}/credentials/${created.credentialId}`]) {
      const response = await owner.api.get(path);
      expect(response.status).toBe(200);
      expect(JSON.stringify(response.body)).not.toContain(value);
      expect(JSON.stringify(response.body)).not.toContain("secretEnvelope");
    }
  });

  it("changes only metadata: name, notes and default effect; a secret, region or type in a PUT is a 400", async () => {
    const created = await credential("target");
    const updated = await owner.api.put(`${base()}/credentials/${created.credentialId}`, {
      credentialName: "Renamed",
      notes: "rotated upstream",
    });
    expect(updated.status).toBe(200);
    expect(updated.body.credentials[0]).toMatchObject({
      credentialName: "Renamed",
      notes: "rotated upstream",
    });
    for (const [body, field] of [
      [{ secret: { token: "new" } }, "secret"],
      [{ region: EU }, "region"],
      [{ credentialRegion: EU }, "credentialRegion"],
      [{ credentialType: "proxy" }, "credentialType"],
      [{ authType: "basicAuth" }, "authType"],
    ] as const) {
      expectValidation(await owner.api.put(`${base()}/credentials/${created.credentialId}`, body), [field]);
    }
  });

  it.each([
    [{ region: "mars-1" }, ["region"]],
    [{ authType: "oauth2" }, ["authType"]], // target only, asked as a proxy credential
    [{ authType: "jwtVerify", credentialType: "target" }, ["authType"]],
    [{ authType: "teleport" }, ["authType"]],
    [{ secret: { keyName: "x-api-key" } }, ["secret.keyValue"]],
    [{ secret: undefined }, ["secret"]],
    [{ credentialType: "both" }, ["credentialType"]],
  ] as [Record<string, unknown>, string[]][])(
    "rejects %j with 400 naming %j and stores nothing",
    async (overrides, fields) => {
      const before = await owner.api.get(`${base()}/credentials?limit=100`);
      const body = {
        credentialName: "Bad",
        credentialType: "proxy",
        authType: "apiKey",
        region: US,
        secret: { keyName: "x-api-key", keyValue: "k" },
        ...overrides,
      };
      expectValidation(await owner.api.post(`${base()}/credentials`, body), fields);
      const after = await owner.api.get(`${base()}/credentials?limit=100`);
      expect(after.body.pagination.total).toBe(before.body.pagination.total);
    },
  );
});

describe("proxies and the regional rule", () => {
  it("creates a proxy with its defaults and data-plane URL, and gets and lists it", async () => {
    const { proxy: created, proxyCredential, target: theTarget } = await proxy({ proxyAlias: "Billing-API" });
    expect(created).toMatchObject({
      pKey: clientId,
      sKey: created.proxyId,
      proxyRegion: US,
      proxyActive: true,
      proxyDefaultRuleEffect: "allow",
      proxyAlias: "billing-api",
      proxyAdditionalHeaders: {},
      proxyAdditionalQueryParams: {},
      proxyAdditionalData: {},
      proxyProxyCredentialId: proxyCredential.credentialId,
      proxyTargetId: theTarget.targetId,
      proxyUrl: `${stack.regions[US]}/api/${created.proxyId}/`,
    });
    const got = await owner.api.get(`${base()}/proxies/${created.proxyId}`);
    expect(got.body.proxies).toEqual([created]);
    const listed = await owner.api.get(`${base()}/proxies?limit=100`);
    expect(listed.body.proxies.map((p: any) => p.proxyId)).toContain(created.proxyId);
  });

  it("refuses links in another region, of the wrong type, missing, or of another client (400 naming the field)", async () => {
    const [euProxyCred, usProxyCred, usTargetCred, usTarget, euTarget] = await Promise.all([
      credential("proxy", { region: EU }),
      credential("proxy"),
      credential("target"),
      target(),
      target(owner, { targetRegion: EU }),
    ]);
    const good = {
      proxyName: "P",
      proxyRegion: US,
      proxyProxyCredentialId: usProxyCred.credentialId,
      proxyTargetId: usTarget.targetId,
      proxyTargetCredentialId: usTargetCred.credentialId,
    };
    const stranger = await stack.newUser();
    const otherClient = await createClientFor(stranger, "Other");
    const foreignCred = await credential("proxy", {}, stranger, otherClient);
    for (const [change, field] of [
      [{ proxyProxyCredentialId: euProxyCred.credentialId }, "proxyProxyCredentialId"],
      [{ proxyTargetId: euTarget.targetId }, "proxyTargetId"],
      [{ proxyProxyCredentialId: usTargetCred.credentialId }, "proxyProxyCredentialId"],
      [{ proxyTargetCredentialId: usProxyCred.credentialId }, "proxyTargetCredentialId"],
      [{ proxyTargetId: randomUUID() }, "proxyTargetId"],
      [{ proxyProxyCredentialId: foreignCred.credentialId }, "proxyProxyCredentialId"],
      [{ proxyRegion: "mars-1" }, "proxyRegion"],
      [{ proxyAlias: "-bad-" }, "proxyAlias"],
      [{ proxyTimeoutSeconds: 61 }, "proxyTimeoutSeconds"],
      [{ proxyAdditionalHeaders: { "bad header": "x" } }, "proxyAdditionalHeaders"],
    ] as const) {
      const response = await owner.api.post(`${base()}/proxies`, { ...good, ...change });
      expect(response.status, `${field}: ${JSON.stringify(response.body)}`).toBe(400);
      expect(response.body.fields?.[0]).toMatch(new RegExp(`^${field}`));
    }
  });

  it("keeps aliases unique within the client, also when two creates race", async () => {
    const { proxy: first } = await proxy({ proxyAlias: "shared" });
    const again = await proxy().catch(() => undefined);
    expect(again).toBeDefined();
    const taken = await owner.api.put(`${base()}/proxies/${again!.proxy.proxyId}`, { proxyAlias: "SHARED" });
    expect(taken.status).toBe(409);

    const [pc, tc, t] = await Promise.all([credential("proxy"), credential("target"), target()]);
    const body = {
      proxyName: "Racer",
      proxyRegion: US,
      proxyProxyCredentialId: pc.credentialId,
      proxyTargetId: t.targetId,
      proxyTargetCredentialId: tc.credentialId,
      proxyAlias: "race-alias",
    };
    const results = await Promise.all([
      owner.api.post(`${base()}/proxies`, body),
      owner.api.post(`${base()}/proxies`, body),
      owner.api.post(`${base()}/proxies`, body),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);

    // Releasing an alias frees it.
    const released = await owner.api.put(`${base()}/proxies/${first.proxyId}`, { proxyAlias: null });
    expect(released.status).toBe(200);
    const claimed = await owner.api.put(`${base()}/proxies/${again!.proxy.proxyId}`, {
      proxyAlias: "shared",
    });
    expect(claimed.status).toBe(200);
  });

  it("updates partially and answers with the subset (pKey, sKey, changed fields, proxyUpdatedAt)", async () => {
    const { proxy: created } = await proxy();
    const response = await owner.api.put(`${base()}/proxies/${created.proxyId}`, {
      proxyActive: false,
      proxyAdditionalHeaders: { "X-Team": "billing" },
    });
    expect(response.status).toBe(200);
    expect(response.body.proxies).toEqual([
      {
        pKey: clientId,
        sKey: created.proxyId,
        proxyActive: false,
        proxyAdditionalHeaders: { "X-Team": "billing" },
        proxyUpdatedAt: expect.any(String),
      },
    ]);
    const got = await owner.api.get(`${base()}/proxies/${created.proxyId}`);
    expect(got.body.proxies[0]).toMatchObject({ proxyActive: false, proxyName: "Main" });
    expectValidation(await owner.api.put(`${base()}/proxies/${created.proxyId}`, { proxyRegion: EU }), [
      "proxyRegion",
    ]);
  });

  it("a proxy in eu-west-1 uses only eu-west-1 resources and is stored there", async () => {
    const { proxy: created } = await proxy({}, EU);
    expect(created.proxyRegion).toBe(EU);
    expect(created.proxyUrl).toBe(`${stack.regions[EU]}/api/${created.proxyId}/`);
    expect(await storedItem(keys.proxy(clientId, created.proxyId), EU)).toBeDefined();
    expect(await storedItem(keys.proxy(clientId, created.proxyId), US)).toBeUndefined();
  });
});

describe("rules", () => {
  it("creates rules on a credential, a proxy and a target in both path forms, lists and deletes them", async () => {
    const { proxy: p, proxyCredential, target: t } = await proxy();
    const parents = [
      `credentials/${proxyCredential.credentialId}`,
      `proxies/${p.proxyId}`,
      `targets/${t.targetId}`,
    ];
    for (const parent of parents) {
      const flat = await owner.api.post(`${base()}/${parent}/rules`, {
        effect: "deny",
        priority: 10,
        methods: ["delete"],
        pathPattern: "^/admin",
        pathPresence: "present",
      });
      expect(flat.status, JSON.stringify(flat.body)).toBe(201);
      expect(flat.body.rules[0]).toMatchObject({
        pKey: "RULE",
        effect: "deny",
        priority: 10,
        methods: ["DELETE"],
        path: { pattern: "^/admin", presence: "present" },
      });
      const nested = await owner.api.post(`${base()}/${parent}/rules`, {
        effect: "allow",
        priority: 500,
        path: { pattern: "^/public", presence: "present" },
        headerChecks: [{ name: "X-Tenant", pattern: "^acme$", presence: "present" }],
        regexFlags: "i",
        notes: "public paths",
      });
      expect(nested.status).toBe(201);
      const list = await owner.api.get(`${base()}/${parent}/rules`);
      expect(list.status).toBe(200);
      expect(list.body.rules.map((r: any) => r.priority)).toEqual([500, 10]);
      for (const rule of list.body.rules) {
        expect(rule.pKey).toBe("RULE");
        expect(rule.sKey).toBe(rule.ruleId);
        expect(rule.parentId).toBe(parent.split("/")[1]);
      }
      const removed = await owner.api.delete(`${base()}/${parent}/rules/${flat.body.rules[0].ruleId}`);
      expect(removed.status).toBe(200);
      const again = await owner.api.delete(`${base()}/${parent}/rules/${flat.body.rules[0].ruleId}`);
      expect(again.status).toBe(404);
      expect((await owner.api.get(`${base()}/${parent}/rules`)).body.rules).toHaveLength(1);
      const put = await owner.api.put(`${base()}/${parent}/rules`, {});
      expect([404, 405]).toContain(put.status);
    }
  });

  it.each([
    [{ effect: "deny", priority: 1001 }, ["priority"]],
    [{ effect: "deny", priority: -1 }, ["priority"]],
    [{ effect: "block", priority: 1 }, ["effect"]],
    [{ effect: "deny", priority: 1, pathPattern: "(unclosed" }, ["pathPattern"]],
    [
      { effect: "deny", priority: 1, headerChecks: [{ name: "x", pattern: "[", presence: "present" }] },
      ["headerChecks.0.pattern"],
    ],
    [{ effect: "deny", priority: 1, methods: ["FETCH"] }, ["methods.0"]],
  ] as [Record<string, unknown>, string[]][])(
    "rejects the rule %j with 400 naming %j",
    async (body, fields) => {
      const t = await target();
      expectValidation(await owner.api.post(`${base()}/targets/${t.targetId}/rules`, body), fields);
    },
  );
});

describe("cascades", () => {
  it("deleting a credential deletes the proxies using it (as either credential) and their rules", async () => {
    const a = await proxy();
    const [otherProxyCred, otherTarget] = await Promise.all([credential("proxy"), target()]);
    // A second proxy that uses a's target credential as its target credential.
    const b = await owner.api.post(`${base()}/proxies`, {
      proxyName: "B",
      proxyRegion: US,
      proxyProxyCredentialId: otherProxyCred.credentialId,
      proxyTargetId: otherTarget.targetId,
      proxyTargetCredentialId: a.targetCredential.credentialId,
    });
    expect(b.status).toBe(201);
    const rule = await owner.api.post(`${base()}/proxies/${a.proxy.proxyId}/rules`, {
      effect: "deny",
      priority: 1,
    });
    expect(rule.status).toBe(201);

    const deleted = await owner.api.delete(`${base()}/credentials/${a.targetCredential.credentialId}`);
    expect(deleted.status).toBe(200);
    for (const proxyId of [a.proxy.proxyId, b.body.proxies[0].proxyId]) {
      expect((await owner.api.get(`${base()}/proxies/${proxyId}`)).status).toBe(404);
      expect(await storedItem(keys.proxy(clientId, proxyId), US)).toBeUndefined();
    }
    expect(
      await storedItem(keys.rule(clientId, a.proxy.proxyId, rule.body.rules[0].ruleId), US),
    ).toBeUndefined();
    expect(await storedItem(keys.credential(clientId, a.targetCredential.credentialId), US)).toBeUndefined();
    // The others survive.
    expect((await owner.api.get(`${base()}/credentials/${a.proxyCredential.credentialId}`)).status).toBe(200);
  });

  it("deleting a target deletes its proxies; deleting a proxy deletes its rules", async () => {
    const a = await proxy({ proxyAlias: "cascade-alias" });
    const deleted = await owner.api.delete(`${base()}/targets/${a.target.targetId}`);
    expect(deleted.status).toBe(200);
    expect((await owner.api.get(`${base()}/proxies/${a.proxy.proxyId}`)).status).toBe(404);
    expect(await storedItem(keys.proxyAlias(clientId, "cascade-alias"), US)).toBeUndefined();

    const b = await proxy();
    const rule = await owner.api.post(`${base()}/proxies/${b.proxy.proxyId}/rules`, {
      effect: "allow",
      priority: 3,
    });
    expect((await owner.api.delete(`${base()}/proxies/${b.proxy.proxyId}`)).status).toBe(200);
    expect(
      await storedItem(keys.rule(clientId, b.proxy.proxyId, rule.body.rules[0].ruleId), US),
    ).toBeUndefined();
    // The credentials and target of a deleted proxy stay.
    expect((await owner.api.get(`${base()}/targets/${b.target.targetId}`)).status).toBe(200);
  });

  it("an interrupted cascade never leaves a proxy pointing at a deleted credential, and a retry finishes it", async () => {
    const shared = await credential("target");
    const proxyIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const [pc, t] = await Promise.all([credential("proxy"), target()]);
      const response = await owner.api.post(`${base()}/proxies`, {
        proxyName: `P${i}`,
        proxyRegion: US,
        proxyProxyCredentialId: pc.credentialId,
        proxyTargetId: t.targetId,
        proxyTargetCredentialId: shared.credentialId,
      });
      expect(response.status).toBe(201);
      proxyIds.push(response.body.proxies[0].proxyId);
    }
    // Fail the second proxy deletion of the cascade (a crash in the middle).
    const client = dynamo(US);
    let proxyDeletes = 0;
    client.middlewareStack.add(
      (next) => async (args) => {
        const input = JSON.stringify(args.input);
        if (
          "TransactItems" in (args.input as object) &&
          input.includes("PROXY#") &&
          input.includes('"Delete"')
        ) {
          proxyDeletes += 1;
          if (proxyDeletes === 2) throw new Error("injected failure in the middle of the cascade");
        }
        return next(args);
      },
      { step: "initialize", name: "cascade-failure" },
    );
    try {
      const failed = await owner.api.delete(`${base()}/credentials/${shared.credentialId}`);
      expect(failed.status).toBe(500);
      expect(failed.body).toEqual({ message: "Internal server error", requestId: expect.any(String) });
    } finally {
      client.middlewareStack.remove("cascade-failure");
    }
    // Every proxy still stored points at a credential that still exists (marked as being deleted).
    const stillThere = (
      await Promise.all(proxyIds.map((id) => storedItem(keys.proxy(clientId, id), US)))
    ).filter(Boolean);
    expect(stillThere.length).toBeGreaterThan(0);
    expect(stillThere.length).toBeLessThan(3);
    const storedCredential = await storedItem(keys.credential(clientId, shared.credentialId), US);
    expect(storedCredential?.deletingAt).toEqual(expect.any(String));
    // No new proxy can attach to it meanwhile.
    const [pc, t] = await Promise.all([credential("proxy"), target()]);
    const attach = await owner.api.post(`${base()}/proxies`, {
      proxyName: "Late",
      proxyRegion: US,
      proxyProxyCredentialId: pc.credentialId,
      proxyTargetId: t.targetId,
      proxyTargetCredentialId: shared.credentialId,
    });
    expect(attach.status).toBe(400);
    expect(attach.body.fields).toEqual(["proxyTargetCredentialId"]);

    const retried = await owner.api.delete(`${base()}/credentials/${shared.credentialId}`);
    expect(retried.status).toBe(200);
    for (const id of proxyIds) expect(await storedItem(keys.proxy(clientId, id), US)).toBeUndefined();
    expect(await storedItem(keys.credential(clientId, shared.credentialId), US)).toBeUndefined();
  });
});

describe("roles and tenant isolation", () => {
  it("lets a plain user read but not change anything (403)", async () => {
    const plain = await stack.newUser();
    await joinClient(owner, clientId, plain, "user");
    const a = await proxy();
    for (const path of [
      `${base()}/credentials`,
      `${base()}/targets/${a.target.targetId}`,
      `${base()}/proxies/${a.proxy.proxyId}`,
      `${base()}/proxies/${a.proxy.proxyId}/rules`,
    ]) {
      expect((await plain.api.get(path)).status).toBe(200);
    }
    const writes = [
      plain.api.post(`${base()}/targets`, {
        targetName: "x",
        targetRegion: US,
        targetBaseURL: "https://x.test",
        targetTestPath: "/",
      }),
      plain.api.put(`${base()}/targets/${a.target.targetId}`, { targetName: "y" }),
      plain.api.delete(`${base()}/targets/${a.target.targetId}`),
      plain.api.put(`${base()}/credentials/${a.proxyCredential.credentialId}`, { credentialName: "y" }),
      plain.api.delete(`${base()}/credentials/${a.proxyCredential.credentialId}`),
      plain.api.put(`${base()}/proxies/${a.proxy.proxyId}`, { proxyActive: false }),
      plain.api.delete(`${base()}/proxies/${a.proxy.proxyId}`),
      plain.api.post(`${base()}/proxies/${a.proxy.proxyId}/rules`, { effect: "deny", priority: 1 }),
    ];
    for (const response of await Promise.all(writes)) expect(response.status).toBe(403);
    expect((await owner.api.get(`${base()}/proxies/${a.proxy.proxyId}`)).body.proxies[0].proxyActive).toBe(
      true,
    );
  });

  it("lets a reader read targets and rules but change nothing, and a devops member manage them", async () => {
    const [reader, devops] = await Promise.all([stack.newUser(), stack.newUser()]);
    await joinClient(owner, clientId, reader, "reader");
    await joinClient(owner, clientId, devops, "devops");
    const t = await target();
    const rules = `${base()}/targets/${t.targetId}/rules`;
    const rule = await owner.api.post(rules, { effect: "deny", priority: 1 });
    for (const path of [`${base()}/targets`, `${base()}/targets/${t.targetId}`, rules]) {
      expect((await reader.api.get(path)).status, path).toBe(200);
    }
    const writes = await Promise.all([
      reader.api.post(`${base()}/targets`, {
        targetName: "x",
        targetRegion: US,
        targetBaseURL: "https://x.test",
        targetTestPath: "/",
      }),
      reader.api.put(`${base()}/targets/${t.targetId}`, { targetName: "y" }),
      reader.api.delete(`${base()}/targets/${t.targetId}`),
      reader.api.post(rules, { effect: "deny", priority: 2 }),
      reader.api.delete(`${rules}/${rule.body.rules[0].ruleId}`),
    ]);
    for (const response of writes) {
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ message: "Forbidden: requires the devops role" });
    }
    const created = await target(devops);
    const renamed = await devops.api.put(`${base()}/targets/${created.targetId}`, { targetName: "Renamed" });
    expect(renamed.status).toBe(200);
    expect(renamed.body.targets[0]).toMatchObject({ targetName: "Renamed", pKey: clientId });
    const devopsRule = await devops.api.post(rules, { effect: "allow", priority: 5 });
    expect(devopsRule.status).toBe(201);
    expect((await devops.api.delete(`${rules}/${devopsRule.body.rules[0].ruleId}`)).status).toBe(200);
    expect((await devops.api.delete(`${base()}/targets/${created.targetId}`)).status).toBe(200);
  });

  it("a member of another client cannot read, change, delete or attach anything of this client by id", async () => {
    const a = await proxy();
    const rule = await owner.api.post(`${base()}/targets/${a.target.targetId}/rules`, {
      effect: "deny",
      priority: 1,
    });
    const intruder = await stack.newUser();
    const ownClient = await createClientFor(intruder, "Intruder Inc");
    const ids = {
      credential: a.proxyCredential.credentialId,
      target: a.target.targetId,
      proxy: a.proxy.proxyId,
    };
    // Through the victim's client path: the same 404 as for a client that does not exist.
    const victimPaths = [
      `${base()}/credentials`,
      `${base()}/credentials/${ids.credential}`,
      `${base()}/targets/${ids.target}`,
      `${base()}/proxies/${ids.proxy}`,
      `${base()}/targets/${ids.target}/rules`,
    ];
    for (const path of victimPaths) {
      const isItem = !path.endsWith("/credentials") && !path.endsWith("/rules");
      const responses = await Promise.all([
        intruder.api.get(path),
        ...(isItem ? [intruder.api.put(path, { notes: "pwned" }), intruder.api.delete(path)] : []),
      ]);
      for (const response of responses) {
        expect(response.status).toBe(404);
        expect(response.body).toEqual({ message: "Client not found" });
      }
    }
    const ruleDelete = await intruder.api.delete(
      `${base()}/targets/${ids.target}/rules/${rule.body.rules[0].ruleId}`,
    );
    expect(ruleDelete.status).toBe(404);
    // Through their own client path: the ids are simply not theirs.
    for (const path of [
      `/api/clients/${ownClient}/credentials/${ids.credential}`,
      `/api/clients/${ownClient}/targets/${ids.target}`,
      `/api/clients/${ownClient}/proxies/${ids.proxy}`,
    ]) {
      expect((await intruder.api.get(path)).status).toBe(404);
      expect((await intruder.api.delete(path)).status).toBe(404);
      expect((await intruder.api.put(path, { notes: "x" })).status).toBe(404);
    }
    for (const path of [
      `/api/clients/${ownClient}/credentials/${ids.credential}/rules`,
      `/api/clients/${ownClient}/targets/${ids.target}/rules`,
      `/api/clients/${ownClient}/proxies/${ids.proxy}/rules`,
    ]) {
      expect((await intruder.api.get(path)).status).toBe(404);
      expect((await intruder.api.post(path, { effect: "allow", priority: 1 })).status).toBe(404);
    }
    // Attaching the victim's credential and target to the intruder's own proxy.
    const [ownProxyCred, ownTargetCred, ownTarget] = await Promise.all([
      credential("proxy", {}, intruder, ownClient),
      credential("target", {}, intruder, ownClient),
      target(intruder, {}, ownClient),
    ]);
    const attempts = [
      { proxyProxyCredentialId: ids.credential },
      { proxyTargetId: ids.target },
      { proxyTargetCredentialId: a.targetCredential.credentialId },
    ];
    for (const attempt of attempts) {
      const response = await intruder.api.post(`/api/clients/${ownClient}/proxies`, {
        proxyName: "steal",
        proxyRegion: US,
        proxyProxyCredentialId: ownProxyCred.credentialId,
        proxyTargetId: ownTarget.targetId,
        proxyTargetCredentialId: ownTargetCred.credentialId,
        ...attempt,
      });
      expect(response.status).toBe(400);
      expect(response.body.fields).toEqual(Object.keys(attempt));
    }
    // Nothing of the victim changed.
    const still = await owner.api.get(`${base()}/proxies/${ids.proxy}`);
    expect(still.status).toBe(200);
    expect(
      (await owner.api.get(`${base()}/credentials/${ids.credential}`)).body.credentials[0].credentialName,
    ).toBe("proxy key");
  });
});

describe("secrets in logs", () => {
  it("no log line written during this file contains any secret given to the vault", () => {
    expect(secretsSeen.size).toBeGreaterThan(10);
    const joined = logLines.join("\n");
    for (const secret of secretsSeen) expect(joined).not.toContain(secret);
  });
});
