/**
 * The data plane loads re2js on demand (lib/domain/rules/regex.ts): runtime-config.ts awaits it
 * before compiling a proxy's rules and meters when one of them has a pattern. This file imports
 * only the data plane's modules (no rule or predicate schema, which install re2js at start), as the
 * data-plane bundle does, so a missing `await loadRuleEngine()` fails here with
 * RuleEngineNotLoadedError instead of being hidden by the Core API's eager install.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { PutCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { clearRuntimeCache, compileRuntime, loadProxyRuntime } from "#lib/data-plane/runtime-config.ts";
import type { MeterItem } from "#lib/db/entities/meter.ts";
import type { ProxyItem } from "#lib/db/entities/proxy.ts";
import type { RuleItem } from "#lib/db/entities/rule.ts";
import { keys } from "#lib/db/keys.ts";
import { homeDb, homeRegion, tableName } from "#lib/db/store.ts";
import { ruleEngineLoaded } from "#lib/domain/rules/regex.ts";
import { provisionTable } from "#local/provision.ts";

const NOW = "2026-01-01T00:00:00.000Z";

const proxyItem = (clientId: string, proxyId: string): ProxyItem => ({
  ...keys.proxy(clientId, proxyId),
  entity: "proxy",
  proxyId,
  clientId,
  userId: "u1",
  parentId: clientId,
  proxyName: "p",
  proxyRegion: homeRegion(),
  proxyProxyCredentialId: "no-credential",
  proxyTargetId: "no-target",
  proxyTargetCredentialId: "no-target-credential",
  proxyActive: true,
  proxyDefaultRuleEffect: "allow",
  proxyAdditionalHeaders: {},
  proxyAdditionalQueryParams: {},
  proxyAdditionalData: {},
  proxyTimeoutSeconds: 30,
  proxyCreatedAt: NOW,
  proxyUpdatedAt: NOW,
  proxyVersion: 1,
});

const ruleItem = (clientId: string, parentId: string, changes: Partial<RuleItem> = {}): RuleItem => ({
  ...keys.rule(clientId, parentId, "r1"),
  entity: "rule",
  ruleId: "r1",
  effect: "deny",
  priority: 10,
  methods: [],
  path: null,
  pathPattern: null,
  pathPresence: null,
  headerChecks: [],
  queryChecks: [],
  regexFlags: "",
  notes: "",
  userId: "u1",
  clientId,
  parentId,
  parentType: "proxy",
  createdAt: NOW,
  updatedAt: NOW,
  ...changes,
});

const meterItem = (clientId: string, proxyId: string, changes: Partial<MeterItem> = {}): MeterItem => ({
  ...keys.meter(clientId, proxyId, "m1"),
  entity: "meter",
  meterId: "m1",
  proxyId,
  clientId,
  userId: "u1",
  parentId: proxyId,
  meterRegion: homeRegion(),
  meterType: "request_count",
  meterActive: true,
  meterMode: "conditional",
  effect: "include",
  limits: null,
  extraction: null,
  methods: [],
  path: null,
  query: [],
  headers: [],
  body: [],
  token: [],
  variables: [],
  limitBy: null,
  alerts: null,
  notes: "",
  createdAt: NOW,
  updatedAt: NOW,
  meterVersion: 1,
  ...changes,
});

const noRules = { credential: [], proxy: [], target: [] };
const request = (path: string) => ({ method: "GET", path, headers: {}, query: {} });

describe("compiling a proxy's rules and meters on the data plane", () => {
  beforeAll(async () => {
    await provisionTable(homeRegion(), getConfig().tableName);
  });

  it("does not load re2js when nothing has a pattern", async () => {
    const compiled = await compileRuntime(
      { ...noRules, proxy: [ruleItem("c", "p", { methods: ["DELETE"] })] },
      [
        meterItem("c", "p", { methods: ["POST"], headers: [{ name: "x-a", presence: "present" }] }),
        meterItem("c", "p", { meterActive: false, path: { pattern: "^/off", presence: "present" } }),
      ],
    );
    expect(ruleEngineLoaded()).toBe(false);
    expect(compiled.compiledRules.proxy.rules[0]?.invalid).toBeNull();
    expect(compiled.meters).toHaveLength(1);
  });

  it("loads re2js before compiling a stored proxy's rule and meter patterns (cold, from the table)", async () => {
    const clientId = randomUUID();
    const proxyId = randomUUID();
    const items = [
      { ...keys.proxyRuntime(proxyId), clientId },
      proxyItem(clientId, proxyId),
      ruleItem(clientId, proxyId, {
        path: { pattern: "^/admin", presence: "present" },
        pathPattern: "^/admin",
        pathPresence: "present",
      }),
      meterItem(clientId, proxyId, { path: { pattern: "^/v1/", presence: "present" } }),
    ];
    for (const item of items) await homeDb().send(new PutCommand({ TableName: tableName(), Item: item }));
    clearRuntimeCache();
    expect(ruleEngineLoaded()).toBe(false);

    const loaded = await loadProxyRuntime(homeRegion(), proxyId);
    expect(ruleEngineLoaded()).toBe(true);
    const runtime = loaded!.runtime;
    const [rule] = runtime.compiledRules.proxy.rules;
    expect(rule?.invalid).toBeNull();
    expect(rule?.checks.map((check) => check.field)).toEqual(["path"]);
    const [meter] = runtime.meters;
    expect(meter?.applies(request("/v1/items"))).toBe(true);
    expect(meter?.applies(request("/v2/items"))).toBe(false);
  });

  it("loads re2js for a meter pattern alone, and for a rule's header check alone (fresh modules)", async () => {
    for (const [rules, meters] of [
      [noRules, [meterItem("c", "p", { token: [{ claim: "sub", pattern: "^u", presence: "present" }] })]],
      [
        {
          ...noRules,
          target: [
            ruleItem("c", "t", { headerChecks: [{ name: "x-key", pattern: "^k", presence: "present" }] }),
          ],
        },
        [],
      ],
    ] as const) {
      vi.resetModules();
      const regex = await import("#lib/domain/rules/regex.ts");
      const config = await import("#lib/data-plane/runtime-config.ts");
      expect(regex.ruleEngineLoaded()).toBe(false);
      const compiled = await config.compileRuntime(rules, meters);
      expect(regex.ruleEngineLoaded()).toBe(true);
      expect(compiled.compiledRules.target.rules.every((rule) => rule.invalid === null)).toBe(true);
      expect(compiled.meters.every((meter) => meter.applies.compiled.invalid === null)).toBe(true);
    }
  });
});
