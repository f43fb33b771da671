/**
 * Stage admit (lib/data-plane/stages/admit.ts): the checks of spec 4.13 in their order, on a
 * configuration made of real items and really compiled rules; caller authentication injected (the
 * real authenticateCaller where the test is about the flow, a recording one where it is about
 * what admit hands it).
 */
import { describe, expect, it } from "vitest";
import { authenticateCaller } from "#lib/data-plane/caller-auth.ts";
import { type Admitted, type Answer, isAnswer } from "#lib/data-plane/context.ts";
import { type Authenticate, admit } from "#lib/data-plane/stages/admit.ts";
import {
  answerOf,
  CALLER_KEY,
  callerCredential,
  credential,
  located,
  type RuntimeOptions,
  rule,
  runtime,
} from "./fixtures.ts";

/** A refusal's status and service headers; undefined when admit let the request in. */
const summary = (result: Answer | Admitted) =>
  isAnswer(result)
    ? { status: result.response.status, code: result.outcome.code, message: result.outcome.message }
    : undefined;

describe("admit: the MSP paying for a managed client", () => {
  it("suspended: 402 billing-suspended, the body of the client's own suspension; lifted: admitted", async () => {
    const own = answerOf(await admit(located(runtime({ billingStatus: "suspended" })), authenticateCaller));
    const byMsp = answerOf(await admit(located(runtime({ mspSuspended: true })), authenticateCaller));
    expect(summary(byMsp)).toEqual({
      status: 402,
      code: "billing-suspended",
      message: "Payment required: the account's billing is suspended",
    });
    expect(byMsp.response.body.toString()).toBe(own.response.body.toString());
    const lifted = located(runtime({ mspSuspended: false }));
    expect(await admit(lifted, authenticateCaller)).toBe(lifted);
  });
});

describe("admit: dunning, decided at the request's time (docs/billing.md)", () => {
  it("payments failing, the grace period not over: admitted; over: 402 billing-suspended", async () => {
    const recent = located(runtime({ suspendAt: Date.now() + 60_000 }));
    expect(await admit(recent, authenticateCaller)).toBe(recent);
    const old = answerOf(await admit(located(runtime({ suspendAt: Date.now() - 1 })), authenticateCaller));
    expect(summary(old)).toMatchObject({ status: 402, code: "billing-suspended" });
  });
});

describe("admit: refusals in the order of spec 4.13", () => {
  it("reports the first failing check; fixing it reveals the next", async () => {
    // A configuration wrong in every way; each step below fixes the check that refused.
    const broken: RuntimeOptions = {
      proxy: { proxyActive: false },
      clientStatus: "pendingDeletion",
      billingStatus: "suspended",
      proxyCredential: null,
      target: null,
      rules: { proxy: [rule("deny-items", { effect: "deny", priority: 1, pathPattern: "/items" })] },
      targetCredential: null,
    };
    const state = { options: broken, key: "wrong-key" };
    const fix = (change: RuntimeOptions) => () => {
      state.options = { ...state.options, ...change };
    };
    const steps: [() => void, ReturnType<typeof summary>][] = [
      [() => {}, { status: 403, code: "proxy-access-denied", message: "The proxy is inactive" }],
      [
        fix({ proxy: { proxyActive: true } }),
        { status: 403, code: "proxy-access-denied", message: "The organisation is scheduled for deletion" },
      ],
      [
        fix({ clientStatus: "active" }),
        {
          status: 402,
          code: "billing-suspended",
          message: "Payment required: the account's billing is suspended",
        },
      ],
      [
        fix({ billingStatus: "active" }),
        { status: 403, code: "proxy-access-denied", message: "Invalid proxy credential" },
      ],
      // The credential is there, but the caller presents a wrong key.
      [
        fix({ proxyCredential: callerCredential() }),
        { status: 403, code: "proxy-access-denied", message: "Invalid proxy credential" },
      ],
      [
        () => {
          state.key = CALLER_KEY;
        },
        { status: 502, code: "proxy-access-granted", message: "The proxy's target is not available" },
      ],
      [
        fix({ target: {} }),
        {
          status: 403,
          code: "proxy-access-granted",
          message: expect.stringMatching(/^Access denied by an access rule: .*deny-items/),
        },
      ],
      [
        fix({ rules: {} }),
        {
          status: 502,
          code: "proxy-access-granted",
          message: "The proxy's target credential is not available",
        },
      ],
      [fix({ targetCredential: undefined }), undefined],
    ];
    for (const [change, expected] of steps) {
      change();
      const ctx = located(runtime(state.options), { headers: { "x-api-key": state.key } });
      expect(summary(await admit(ctx, authenticateCaller))).toEqual(expected);
    }
  });

  it("a proxy being deleted is inactive", async () => {
    const ctx = located(runtime({ proxy: { deletingAt: "2025-01-01T00:00:00.000Z" } }));
    expect(summary(await admit(ctx, authenticateCaller))?.message).toBe("The proxy is inactive");
    expect(ctx.validation.proxyActive).toBeUndefined();
  });

  it("a credential of a type that cannot authenticate callers is refused without asking authenticate", async () => {
    let asked = 0;
    const authenticate: Authenticate = async () => {
      asked++;
      return { ok: true };
    };
    const ctx = located(runtime({ proxyCredential: credential("c", "proxy", "none", {}) }));
    expect(summary(await admit(ctx, authenticate))).toMatchObject({
      status: 403,
      message: "Invalid proxy credential",
    });
    expect(asked).toBe(0);
  });

  it("a deny in the target layer has passed the proxy's scope; one in the proxy layer has not", async () => {
    const deny = [rule("r", { effect: "deny", priority: 1 })];
    const target = located(runtime({ rules: { target: deny } }));
    await admit(target, authenticateCaller);
    expect(target.validation).toMatchObject({ proxyScopeValid: true });
    expect(target.validation.targetScopeValid).toBeUndefined();
    const proxy = located(runtime({ rules: { proxy: deny } }));
    await admit(proxy, authenticateCaller);
    expect(proxy.validation.proxyScopeValid).toBeUndefined();
    // A layer's default effect denies too.
    const byDefault = located(runtime({ proxy: { proxyDefaultRuleEffect: "deny" } }));
    expect(summary(await admit(byDefault, authenticateCaller))).toMatchObject({
      status: 403,
      code: "proxy-access-granted",
    });
  });

  it("rules see the path after /api/{proxyId}, the method, headers and query", async () => {
    const rules = {
      credential: [
        rule("only-get", { effect: "deny", priority: 1, methods: ["POST"] }),
        rule("no-beta", { effect: "deny", priority: 2, headerChecks: [{ name: "X-Beta" }] }),
      ],
      proxy: [rule("no-admin", { effect: "deny", priority: 1, path: { pattern: "^/admin" } })],
      target: [rule("no-debug", { effect: "deny", priority: 1, queryChecks: [{ name: "debug" }] })],
    };
    const cases: [Parameters<typeof located>[1], string | undefined][] = [
      [{}, undefined],
      [{ method: "POST" }, "only-get"],
      [{ path: "/api/proxy-1/admin/x" }, "no-admin"],
      [{ path: "/api/proxy-1/x/admin" }, undefined],
      [{ rawQuery: "debug=1" }, "no-debug"],
      [{ headers: { "x-api-key": CALLER_KEY, "x-beta": "1" } }, "no-beta"],
    ];
    for (const [overrides, deniedBy] of cases) {
      const ctx = located(runtime({ rules }), overrides);
      const result = await admit(ctx, authenticateCaller);
      if (deniedBy) expect(answerOf(result).outcome.message, JSON.stringify(overrides)).toContain(deniedBy);
      else expect(result, JSON.stringify(overrides)).toBe(ctx);
    }
  });
});

describe("admit: an admitted request", () => {
  it("sets every validation flag of the checks passed and the admission", async () => {
    const rt = runtime();
    const ctx = located(rt);
    expect(await admit(ctx, authenticateCaller)).toBe(ctx);
    expect(ctx.validation).toEqual({
      proxyExists: true,
      proxyActive: true,
      proxyCredentialExists: true,
      proxyCredentialActive: true,
      proxyCredentialRelationship: true,
      proxyAuthenticated: true,
      proxyCredentialScopeValid: true,
      targetExists: true,
      targetRelationship: true,
      proxyScopeValid: true,
      targetScopeValid: true,
      targetCredentialExists: true,
      targetCredentialActive: true,
      targetCredentialRelationship: true,
      targetCredentialScopeValid: true,
    });
    expect(ctx.admission).toEqual({
      proxyCredential: rt.proxyCredential,
      target: rt.target,
      targetCredential: rt.targetCredential,
      credentialId: "cred-caller",
      rateLimit: 1000, // team plan
    });
  });

  it("records relationships as they are: credentials swapped in their roles are flagged", async () => {
    const rt = runtime({
      proxyCredential: credential("cred-caller", "target", "apiKey", {
        keyName: "x-api-key",
        keyValue: CALLER_KEY,
      }),
      targetCredential: credential("cred-target", "proxy", "bearer", { token: "t" }),
    });
    const ctx = located(rt);
    expect(await admit(ctx, authenticateCaller)).toBe(ctx);
    expect(ctx.validation.proxyCredentialRelationship).toBe(false);
    expect(ctx.validation.targetCredentialRelationship).toBe(false);
  });

  it("hands authenticate the caller's headers, decoded query and the credential; keeps its claims", async () => {
    const seen: Parameters<Authenticate>[] = [];
    const authenticate: Authenticate = async (...args) => {
      seen.push(args);
      return { ok: true, claims: { sub: "user-9" } };
    };
    const ctx = located(runtime({ planTier: "basic" }), { rawQuery: "a=1&b=x%20y&a=2" });
    expect(await admit(ctx, authenticate)).toBe(ctx);
    expect(seen).toHaveLength(1);
    const [callerRequest, callerCredentialArg] = seen[0]!;
    expect(callerRequest.headers["x-api-key"]).toBe(CALLER_KEY);
    expect({ ...callerRequest.query }).toEqual({ a: ["1", "2"], b: "x y" }); // every value (the first authenticates)
    expect(callerCredentialArg).toEqual({
      credentialId: "cred-caller",
      authType: "apiKey",
      secret: { keyName: "x-api-key", keyValue: CALLER_KEY },
    });
    expect(ctx.admission?.claims).toEqual({ sub: "user-9" });
    expect(ctx.admission?.rateLimit).toBe(100); // basic plan
  });

  it("makes no admission when it refuses", async () => {
    const ctx = located(runtime({ targetCredential: null }));
    await admit(ctx, authenticateCaller);
    expect(ctx.admission).toBeUndefined();
    expect(ctx.validation.requestConfigError).toBe(true);
  });
});
