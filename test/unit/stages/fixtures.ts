/**
 * What the stage tests build: a proxy's configuration (ProxyRuntime) made of real typed items
 * (parsed by the entity schemas), rules compiled by the real compiler, meters compiled by the real
 * meter compiler; a request and its context. No store: the stages take their configuration from
 * the context, and their calls to the store are injected functions.
 */
import {
  type Answer,
  type DataPlaneRequest,
  isAnswer,
  type Located,
  newContext,
  type RequestContext,
} from "#lib/data-plane/context.ts";
import { compileMeters } from "#lib/data-plane/meter-plan.ts";
import type { LoadedCredential, ProxyRuntime } from "#lib/data-plane/runtime-config.ts";
import { type CompiledPolicies, NO_POLICIES } from "#lib/data-plane/stages/filter.ts";
import { type CredentialItem, credentialItemOf } from "#lib/db/entities/credential.ts";
import { meterItemOf } from "#lib/db/entities/meter.ts";
import { proxyItemOf } from "#lib/db/entities/proxy.ts";
import { targetItemOf } from "#lib/db/entities/target.ts";
import { keys } from "#lib/db/keys.ts";
import { CreateMeterBody, normaliseMeter } from "#lib/domain/meter-schema.ts";
import { compileRules, type EvaluableRule } from "#lib/domain/rules/rule-evaluator.ts";
import { parseCreateRule } from "#lib/domain/rules/rule-schema.ts";

export const CLIENT_ID = "client-1";
export const PROXY_ID = "proxy-1";
export const CALLER_KEY = "caller-secret-key-0123456789";
export const TARGET_TOKEN = "target-bearer-token-0123456789";
const AT = "2025-01-01T00:00:00.000Z";

/** A stored envelope's shape; the stages never decrypt it (the secret is given already decrypted). */
const ENVELOPE = {
  v: 1,
  alg: "AES-256-GCM",
  keyId: "alias/test",
  encryptedDataKey: "AA==",
  iv: "AA==",
  tag: "AA==",
  ciphertext: "AA==",
};

export function credential(
  credentialId: string,
  credentialType: "proxy" | "target",
  credentialAuthType: CredentialItem["credentialAuthType"],
  secret: Record<string, unknown>,
  extra: Partial<CredentialItem> = {},
): LoadedCredential {
  const item = credentialItemOf({
    ...keys.credential(CLIENT_ID, credentialId),
    credentialId,
    clientId: CLIENT_ID,
    userId: "user-1",
    parentId: CLIENT_ID,
    credentialName: credentialId,
    credentialType,
    credentialAuthType,
    credentialRegion: "us-east-1",
    credentialDefaultRuleEffect: "allow",
    singleUse: false,
    credentialCreatedAt: AT,
    credentialUpdatedAt: AT,
    secretEnvelope: ENVELOPE,
    ...extra,
  });
  return { item, secret };
}

/** The caller's credential: apiKey in `x-api-key`. */
export const callerCredential = (extra: Partial<CredentialItem> = {}) =>
  credential("cred-caller", "proxy", "apiKey", { keyName: "x-api-key", keyValue: CALLER_KEY }, extra);

/** The target's credential: bearer. */
export const targetCredential = () => credential("cred-target", "target", "bearer", { token: TARGET_TOKEN });

/** A rule as the API would store it. */
export const rule = (ruleId: string, body: Record<string, unknown>): EvaluableRule => ({
  ruleId,
  ...parseCreateRule(body),
});

/** A meter as the API would store it (validated and normalised by the meter schema). */
export function meter(meterId: string, body: Record<string, unknown>) {
  const config = normaliseMeter(CreateMeterBody.parse(body));
  return meterItemOf({
    ...keys.meter(CLIENT_ID, PROXY_ID, meterId),
    entity: "meter",
    meterId,
    proxyId: PROXY_ID,
    clientId: CLIENT_ID,
    userId: "user-1",
    parentId: PROXY_ID,
    meterRegion: "us-east-1",
    createdAt: AT,
    updatedAt: AT,
    meterVersion: 1,
    ...config,
  });
}

export interface RuntimeOptions {
  proxy?: Record<string, unknown>;
  target?: Record<string, unknown> | null;
  proxyCredential?: LoadedCredential | null;
  targetCredential?: LoadedCredential | null;
  rules?: { credential?: EvaluableRule[]; proxy?: EvaluableRule[]; target?: EvaluableRule[] };
  meters?: ReturnType<typeof meter>[];
  version?: number;
  billingStatus?: string;
  clientStatus?: string;
  planTier?: string;
  rateLimitOverride?: number | null;
  requestsPerMinute?: number | null;
  requestsPerDay?: number | null;
  mspSuspended?: boolean;
  suspendAt?: number | null;
  policies?: CompiledPolicies;
}

/** A proxy's configuration as runtime-config.ts would load it. */
export function runtime(options: RuntimeOptions = {}): ProxyRuntime {
  const proxy = proxyItemOf({
    ...keys.proxy(CLIENT_ID, PROXY_ID),
    proxyId: PROXY_ID,
    clientId: CLIENT_ID,
    userId: "user-1",
    parentId: CLIENT_ID,
    proxyName: "p",
    proxyRegion: "us-east-1",
    proxyProxyCredentialId: "cred-caller",
    proxyTargetId: "target-1",
    proxyTargetCredentialId: "cred-target",
    proxyActive: true,
    proxyDefaultRuleEffect: "allow",
    proxyAdditionalHeaders: {},
    proxyAdditionalQueryParams: {},
    proxyAdditionalData: {},
    proxyTimeoutSeconds: 30,
    proxyCreatedAt: AT,
    proxyUpdatedAt: AT,
    ...options.proxy,
  });
  const target =
    options.target === null
      ? undefined
      : targetItemOf({
          ...keys.target(CLIENT_ID, "target-1"),
          targetId: "target-1",
          clientId: CLIENT_ID,
          userId: "user-1",
          parentId: CLIENT_ID,
          targetName: "t",
          targetBaseURL: "https://target.example/v1",
          targetTestPath: "/",
          targetRegion: "us-east-1",
          targetDefaultRuleEffect: "allow",
          targetCreatedAt: AT,
          targetUpdatedAt: AT,
          ...options.target,
        });
  const rules = {
    credential: options.rules?.credential ?? [],
    proxy: options.rules?.proxy ?? [],
    target: options.rules?.target ?? [],
  };
  return {
    proxyId: PROXY_ID,
    clientId: CLIENT_ID,
    region: "us-east-1",
    version: options.version ?? 3,
    billingStatus: options.billingStatus ?? "active",
    planTier: options.planTier ?? "team",
    planStatus: "active",
    clientStatus: options.clientStatus ?? "active",
    rateLimitOverride: options.rateLimitOverride ?? null,
    requestsPerMinute: options.requestsPerMinute ?? null,
    requestsPerDay: options.requestsPerDay ?? null,
    mspSuspended: options.mspSuspended ?? false,
    suspendAt: options.suspendAt ?? null,
    proxy,
    target,
    proxyCredential:
      options.proxyCredential === null ? undefined : (options.proxyCredential ?? callerCredential()),
    targetCredential:
      options.targetCredential === null ? undefined : (options.targetCredential ?? targetCredential()),
    rules,
    compiledRules: {
      credential: compileRules(rules.credential),
      proxy: compileRules(rules.proxy),
      target: compileRules(rules.target),
    },
    meters: compileMeters(options.meters ?? []),
    policies: options.policies ?? NO_POLICIES,
  };
}

export function request(overrides: Partial<DataPlaneRequest> = {}): DataPlaneRequest {
  return {
    method: "GET",
    path: `/api/${PROXY_ID}/items/42`,
    rawQuery: "",
    headers: Object.assign(Object.create(null), { "x-api-key": CALLER_KEY }),
    sourceIp: "203.0.113.7",
    stage: "$default",
    arnBase: "arn:aws:lambda:us-east-1:000000000000:function-url/test",
    ...overrides,
  };
}

export const NOW = Date.UTC(2025, 0, 15, 10, 30, 20);

/** A context as the pipeline makes it. */
export const context = (overrides: Partial<DataPlaneRequest> = {}): RequestContext =>
  newContext(request(overrides), "0194a000-0000-7000-8000-000000000001", NOW);

/** A context that has passed locate with this configuration. */
export function located(rt: ProxyRuntime, overrides: Partial<DataPlaneRequest> = {}): Located {
  const ctx = Object.assign(context(overrides), { runtime: rt });
  ctx.fresh = true;
  ctx.validation = { proxyExists: true };
  return ctx;
}

/** The answer a stage ended the request with; throws when it passed the request on instead. */
export function answerOf(result: Answer | RequestContext | undefined): Answer {
  if (result && isAnswer(result)) return result;
  throw new Error("the stage passed the request on; expected an answer");
}
