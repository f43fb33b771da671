/**
 * Stage 2, admit: whether the configuration lets this request through, in the order of spec 4.13:
 * proxy active -> organisation not being deleted -> billing not suspended -> caller authenticated
 * by the proxy credential -> target present -> access rules (credential, proxy, target) -> target
 * credential present. Records each check passed in `ctx.validation` and the admission in
 * `ctx.admission`. No store call: everything comes from the loaded configuration.
 */

import { now } from "#lib/clock.ts";
import type { authenticateCaller } from "#lib/data-plane/caller-auth.ts";
import {
  type Admission,
  type Admitted,
  type Answer,
  denied,
  type Located,
  notForwarded,
  serviceAnswer,
} from "#lib/data-plane/context.ts";
import { BILLING_SUSPENDED, billingSuspended } from "#lib/domain/dunning.ts";
import { rateLimitForPlan } from "#lib/domain/plans.ts";
import {
  decideByDefaultEffects,
  layersHaveRules,
  loadRuleEvaluator,
} from "#lib/domain/rules/access-layers.ts";
import type { ProxySecret } from "#lib/vault/secret-schemas.ts";

export type Authenticate = typeof authenticateCaller;

/** Answers the context as `Admitted` (its `admission` set), or the refusal. */
export async function admit(ctx: Located, authenticate: Authenticate): Promise<Answer | Admitted> {
  const runtime = ctx.runtime;
  const v = ctx.validation;
  const { proxy } = runtime;
  if (proxy.proxyActive !== true || proxy.deletingAt) return denied("The proxy is inactive");
  if (runtime.clientStatus === "pendingDeletion") return denied("The organisation is scheduled for deletion");
  v.proxyActive = true;
  // The client's own billing (suspended, or its payments failing past the grace period's end:
  // docs/billing.md), or that of the MSP paying for it (a managed client billed to it).
  if (billingSuspended(runtime, now())) return serviceAnswer(402, BILLING_SUSPENDED);
  const proxyCredential = runtime.proxyCredential;
  if (!proxyCredential) return denied("Invalid proxy credential");
  v.proxyCredentialExists = true;
  v.proxyCredentialActive = true;
  v.proxyCredentialRelationship = proxyCredential.item.credentialType === "proxy";
  const authType = proxyCredential.item.credentialAuthType;
  if (
    authType !== "apiKey" &&
    authType !== "bearer" &&
    authType !== "basicAuth" &&
    authType !== "jwt" &&
    authType !== "jwtVerify"
  )
    return denied("Invalid proxy credential");
  const auth = await authenticate(
    { headers: ctx.request.headers, query: ctx.query },
    {
      credentialId: proxyCredential.item.credentialId,
      authType,
      secret: proxyCredential.secret as ProxySecret,
    },
  );
  if (!auth.ok) return denied("Invalid proxy credential");
  v.proxyAuthenticated = true;
  v.proxyCredentialScopeValid = true;

  const target = runtime.target;
  if (!target) return notForwarded("The proxy's target is not available");
  v.targetExists = true;
  v.targetRelationship = true;
  const layers = [
    {
      name: "credential",
      defaultEffect: proxyCredential.item.credentialDefaultRuleEffect,
      rules: runtime.compiledRules.credential,
    },
    { name: "proxy", defaultEffect: proxy.proxyDefaultRuleEffect, rules: runtime.compiledRules.proxy },
    { name: "target", defaultEffect: target.targetDefaultRuleEffect, rules: runtime.compiledRules.target },
  ] as const;
  // Without rules the default effects decide; the rule evaluator is loaded for rules only.
  const decision = layersHaveRules(layers)
    ? (await loadRuleEvaluator()).evaluateAccess(layers, {
        method: ctx.request.method,
        path: ctx.apiPath,
        headers: ctx.request.headers,
        query: ctx.query,
      })
    : decideByDefaultEffects(layers);
  if (!decision.allowed) {
    if (decision.layer === "target") v.proxyScopeValid = true;
    return serviceAnswer(403, {
      code: "proxy-access-granted",
      message: `Access denied by an access rule: ${decision.reason}`,
    });
  }
  v.proxyScopeValid = true;
  v.targetScopeValid = true;

  const targetCredential = runtime.targetCredential;
  if (!targetCredential) {
    v.requestConfigError = true;
    return notForwarded("The proxy's target credential is not available");
  }
  v.targetCredentialExists = true;
  v.targetCredentialActive = true;
  v.targetCredentialRelationship = targetCredential.item.credentialType === "target";
  v.targetCredentialScopeValid = true;
  const admission: Admission = {
    proxyCredential,
    target,
    targetCredential,
    credentialId: proxyCredential.item.credentialId,
    // Data-plane rate limit (spec 8) by the client's plan, or a system administrator's override.
    rateLimit: rateLimitForPlan({
      planTier: runtime.planTier as never,
      planStatus: runtime.planStatus as never,
      limitOverrides: { requestsPerMinute: runtime.rateLimitOverride },
    }),
    ...(auth.claims ? { claims: auth.claims } : {}),
  };
  return Object.assign(ctx, { admission });
}
