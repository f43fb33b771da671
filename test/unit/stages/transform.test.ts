/**
 * Stage transform (lib/data-plane/stages/transform.ts) with the real sandbox (QuickJS) and the real
 * predicate compiler: the request transform inside forward (the target call and the claim
 * injected), the response transform on the target's answer, selection, and every failure.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { authenticateCaller } from "#lib/data-plane/caller-auth.ts";
import { type Admitted, type Answer, isAnswer } from "#lib/data-plane/context.ts";
import {
  compileTransform,
  sandboxTestHooks,
  type TransformResult,
  warmSandbox,
} from "#lib/data-plane/sandbox.ts";
import { admit } from "#lib/data-plane/stages/admit.ts";
import { type ForwardDeps, forward } from "#lib/data-plane/stages/forward.ts";
import { type TransformDeps, transformRequest, transformResponse } from "#lib/data-plane/stages/transform.ts";
import type { LoadedTransform, RuntimeTransforms } from "#lib/data-plane/transform-plan.ts";
import { compilePredicates } from "#lib/domain/predicates/evaluate.ts";
import { loadRuleEngine } from "#lib/domain/rules/regex.ts";
import type { OutboundRequest, OutboundResponse } from "#lib/net/outbound.ts";
import { CALLER_KEY, callerCredential, located, NOW, PROXY_ID, runtime, TARGET_TOKEN } from "./fixtures.ts";

beforeAll(async () => {
  await loadRuleEngine();
});

interface Options {
  priority?: number;
  createdAt?: string;
  conditional?: { effect: "include" | "exclude"; [field: string]: unknown };
  responseStatus?: LoadedTransform["responseStatus"];
  variables?: LoadedTransform["variables"];
}

async function loaded(
  kind: "request" | "response",
  transformId: string,
  code: string,
  options: Options = {},
): Promise<LoadedTransform> {
  const { effect, ...predicates } = options.conditional ?? { effect: "include" };
  return {
    transformId,
    kind,
    priority: options.priority ?? 0,
    createdAt: options.createdAt ?? "2025-01-01T00:00:00.000Z",
    transformActive: true,
    mode: options.conditional ? "conditional" : "all",
    effect: options.conditional ? effect : null,
    request: compilePredicates(predicates),
    response: compilePredicates({
      headers: (predicates.responseHeaders as never) ?? [],
      body: (predicates.responseBody as never) ?? [],
    }),
    responseStatus: options.responseStatus ?? [],
    variables: options.variables ?? [],
    compiled: await compileTransform(transformId, code),
  };
}

async function admitted(
  transforms: Partial<RuntimeTransforms>,
  overrides: Parameters<typeof located>[1] = {},
) {
  const rt = runtime({ proxyCredential: callerCredential() });
  rt.transforms = { request: transforms.request ?? [], response: transforms.response ?? [] };
  const ctx = located(rt, overrides);
  const result = await admit(ctx, authenticateCaller);
  if (isAnswer(result)) throw new Error(result.outcome.message);
  return result;
}

/** The real sandbox, with every call's arguments kept. */
function recordingRunner() {
  const calls: unknown[][] = [];
  const deps: TransformDeps = {
    async run(compiled, args): Promise<TransformResult> {
      calls.push(args);
      const { runTransform } = await import("#lib/data-plane/sandbox.ts");
      return runTransform(compiled, args);
    },
  };
  return { calls, deps };
}

function forwardDeps(transformDeps: TransformDeps, answer: Partial<OutboundResponse> = {}) {
  const sent: OutboundRequest[] = [];
  const claims: string[] = [];
  const deps: ForwardDeps = {
    claims: {
      claim: async () => {
        claims.push("claim");
        return true;
      },
      release: async () => undefined,
      consume: async () => undefined,
    },
    send: async (request) => {
      sent.push(request);
      return {
        status: 200,
        headers: { "content-type": "application/json" },
        body: Buffer.from('{"user_name":"ada","id":7}'),
        truncated: false,
        timings: { startedAt: NOW, headersAt: NOW + 1, endedAt: NOW + 2 },
        url: String(request.url),
        ...answer,
      };
    },
    dynamicToken: async () => undefined,
    now: () => NOW,
    transformRequest: (ctx, outgoing) => transformRequest(ctx, outgoing, transformDeps),
  };
  return { sent, claims, deps };
}

const json = (answer: Answer) => JSON.parse(answer.response.body.toString());

describe("request transform", () => {
  it("reshapes the request; the target credential is applied after, on the returned request", async () => {
    const code = `export default function (context, request) {
      const { user_name, ...rest } = request.body;
      return {
        ...request,
        method: "PUT",
        path: "/v2" + request.path,
        query: { ...request.query, added: ["1", "2"] },
        headers: { ...request.headers, "x-added": context.requestId, authorization: "Bearer forged" },
        body: { ...rest, userName: user_name },
      };
    }`;
    const ctx = await admitted(
      { request: [await loaded("request", "t-req", code)] },
      {
        method: "POST",
        rawQuery: "q=a%20b&q=c",
        headers: Object.assign(Object.create(null), {
          "x-api-key": CALLER_KEY,
          "content-type": "application/json",
        }),
        body: Buffer.from('{"user_name":"ada","n":1}'),
      },
    );
    const runner = recordingRunner();
    const { sent, deps } = forwardDeps(runner.deps);
    const answer = await forward(ctx, deps);
    expect(answer.response.status).toBe(200);
    expect(sent).toHaveLength(1);
    const out = sent[0]!;
    expect(out.method).toBe("PUT");
    expect(String(out.url)).toBe("https://target.example/v1/v2/items/42?q=a+b&q=c&added=1&added=2");
    expect(out.headers?.["x-added"]).toBe(ctx.requestId);
    // The credential wins over what the code set.
    expect(out.headers?.authorization).toBe(`Bearer ${TARGET_TOKEN}`);
    expect(JSON.parse(String(out.body))).toEqual({ n: 1, userName: "ada" });
    // What user code saw: no credential of either side anywhere.
    const [context, request] = runner.calls[0]!;
    expect(JSON.stringify(runner.calls)).not.toContain(TARGET_TOKEN);
    expect(JSON.stringify(runner.calls)).not.toContain(CALLER_KEY);
    expect(request).toMatchObject({
      method: "POST",
      path: "/items/42",
      query: { q: ["a b", "c"] },
      body: { user_name: "ada", n: 1 },
    });
    expect(context).toEqual({
      requestId: ctx.requestId,
      clientId: "client-1",
      proxyId: PROXY_ID,
      region: "us-east-1",
      receivedAt: NOW,
      callerIp: "203.0.113.7",
      claims: null,
      variables: {},
    });
    expect(ctx.transforms?.requestTransformId).toBe("t-req");
  });

  it("keeps an unchanged query and body byte for byte; a text body stays text", async () => {
    const ctx = await admitted(
      { request: [await loaded("request", "t-same", "export default (c, r) => r")] },
      {
        method: "POST",
        rawQuery: "a=%7E&b",
        headers: Object.assign(Object.create(null), {
          "x-api-key": CALLER_KEY,
          "content-type": "text/plain",
        }),
        body: Buffer.from("plain text"),
      },
    );
    const { sent, deps } = forwardDeps(recordingRunner().deps);
    await forward(ctx, deps);
    expect(String(sent[0]!.url)).toBe("https://target.example/v1/items/42?a=%7E&b");
    expect(String(sent[0]!.body)).toBe("plain text");
  });

  it("binds the transform's variables into context.variables", async () => {
    const code =
      "export default (context, request) => ({ ...request, headers: { ...request.headers, 'x-v': context.variables.item } })";
    const ctx = await admitted({
      request: [
        await loaded("request", "t-var", code, { variables: [{ name: "item", source: "path", key: "1" }] }),
      ],
    });
    const { sent, deps } = forwardDeps(recordingRunner().deps);
    await forward(ctx, deps);
    expect(sent[0]!.headers?.["x-v"]).toBe("42");
  });

  it("runs only the highest-priority matching transform (ties: the oldest); conditional predicates", async () => {
    const tag = (name: string) =>
      `export default (c, r) => ({ ...r, headers: { ...r.headers, "x-ran": "${name}" } })`;
    const transforms = [
      await loaded("request", "newer", tag("newer"), { priority: 5, createdAt: "2025-02-01T00:00:00.000Z" }),
      await loaded("request", "older", tag("older"), { priority: 5, createdAt: "2025-01-01T00:00:00.000Z" }),
      await loaded("request", "posts", tag("posts"), {
        priority: 9,
        conditional: { effect: "include", methods: ["POST"] },
      }),
      await loaded("request", "low", tag("low"), { priority: 1 }),
    ];
    const { selectionOrder } = await import("#lib/domain/transforms/select.ts");
    const ordered = selectionOrder(transforms);
    for (const [method, expected] of [
      ["GET", "older"],
      ["POST", "posts"],
    ] as const) {
      const ctx = await admitted({ request: ordered }, { method });
      const { sent, deps } = forwardDeps(recordingRunner().deps);
      await forward(ctx, deps);
      expect(sent[0]!.headers?.["x-ran"]).toBe(expected);
    }
  });

  it.each([
    ["a throw", "export default () => { throw new TypeError('nope') }", "(error): TypeError: nope"],
    ["an infinite loop", "export default () => { for (;;) {} }", "(timeout)"],
    ["undefined", "export default () => undefined", "(invalid)"],
    [
      "no object",
      "export default () => 'text'",
      "(invalid): a request transform must return the request object",
    ],
    [
      "a bad method",
      "export default (c, r) => ({ ...r, method: 'TRACE' })",
      "(invalid): method must be one of",
    ],
    [
      "a dot segment",
      "export default (c, r) => ({ ...r, path: '/a/../../etc' })",
      "(invalid): path must not contain",
    ],
    [
      "a header with CR LF",
      "export default (c, r) => ({ ...r, headers: { x: 'a\\r\\nb' } })",
      "(invalid): header x has",
    ],
    [
      "a header name HTTP cannot carry",
      "export default (c, r) => ({ ...r, headers: { 'bad name': 'v' } })",
      '(invalid): header name "bad name" is not valid',
    ],
    [
      "a header value with a lone surrogate",
      "export default (c, r) => ({ ...r, headers: { x: 'a\\uD800b' } })",
      "(invalid): header x has",
    ],
    [
      "a bad query",
      "export default (c, r) => ({ ...r, query: { a: 1 } })",
      "(invalid): query parameter a must be",
    ],
  ])(
    "%s: 500 transform-error naming the transform, the target never called, nothing claimed",
    async (_name, code, reason) => {
      const ctx = await admitted({ request: [await loaded("request", "t-bad", code)] }, {});
      ctx.runtime!.proxyCredential!.item.singleUse = true;
      ctx.admission!.proxyCredential.item.singleUse = true;
      const { sent, claims, deps } = forwardDeps(recordingRunner().deps);
      const answer = await forward(ctx, deps);
      expect(answer.response.status).toBe(500);
      expect(answer.outcome.code).toBe("transform-error");
      expect(answer.outcome.message).toContain(`Request transform t-bad failed ${reason}`);
      expect(json(answer)).toEqual({ code: "transform-error", message: answer.outcome.message });
      expect(answer.outcome.message).toMatch(/^[\x20-\x7e]+$/);
      expect(sent).toHaveLength(0);
      expect(claims).toHaveLength(0);
      expect(ctx.claim).toBeUndefined();
    },
  );
});

async function answered(ctx: Admitted, answer: Partial<OutboundResponse> = {}) {
  const { deps } = forwardDeps(recordingRunner().deps, answer);
  return forward(ctx, deps);
}

describe("response transform", () => {
  it("reshapes the answer; sees the request as sent (without the credential) and the response", async () => {
    const code = `export default function (context, request, response) {
      const { user_name, ...rest } = response.body;
      return { status: 201, headers: { ...response.headers, "x-seen": request.path, "content-length": "1" },
        body: { ...rest, userName: user_name } };
    }`;
    const ctx = await admitted({ response: [await loaded("response", "t-res", code)] });
    const runner = recordingRunner();
    const answer = await transformResponse(ctx, await answered(ctx), runner.deps);
    expect(answer.response.status).toBe(201);
    expect(answer.response.headers["x-seen"]).toBe("/items/42");
    expect(answer.response.headers["content-length"]).toBeUndefined(); // the gateway frames the answer
    expect(json(answer)).toEqual({ id: 7, userName: "ada" });
    expect(answer.outcome.code).toBe("proxy-access-granted");
    expect(JSON.stringify(runner.calls)).not.toContain(TARGET_TOKEN);
    expect(runner.calls[0]![2]).toEqual({
      status: 200,
      headers: { "content-type": "application/json" },
      body: { user_name: "ada", id: 7 },
    });
    // The log shows this response; the target's own answer stays in the trace.
    expect(ctx.transforms?.response?.body.toString()).toBe('{"id":7,"userName":"ada"}');
    expect(ctx.target?.status).toBe(200);
    expect(ctx.transforms?.responseTransformId).toBe("t-res");
  });

  it("response predicates: responseStatus, responseHeaders and responseBody select the transform", async () => {
    const tag = (name: string) =>
      `export default (c, q, r) => ({ ...r, headers: { ...r.headers, "x-ran": "${name}" } })`;
    const transforms = [
      await loaded("response", "errors", tag("errors"), {
        priority: 9,
        conditional: { effect: "include" },
        responseStatus: [{ operator: "gte", value: 400 }],
      }),
      await loaded("response", "by-body", tag("by-body"), {
        priority: 5,
        conditional: {
          effect: "include",
          responseBody: [{ path: "id", pattern: "^7$", presence: "present" }],
        },
      }),
      await loaded("response", "by-header", tag("by-header"), {
        priority: 1,
        conditional: { effect: "include", responseHeaders: [{ name: "x-kind", presence: "present" }] },
      }),
    ];
    const cases: [Partial<OutboundResponse>, string | undefined][] = [
      [{ status: 404 }, "errors"],
      [{}, "by-body"],
      [
        { headers: { "content-type": "application/json", "x-kind": "a" }, body: Buffer.from('{"id":8}') },
        "by-header",
      ],
      [{ body: Buffer.from('{"id":8}') }, undefined],
    ];
    for (const [response, expected] of cases) {
      const ctx = await admitted({ response: transforms });
      const answer = await transformResponse(ctx, await answered(ctx, response), recordingRunner().deps);
      expect(answer.response.headers["x-ran"]).toBe(expected);
    }
  });

  it("a failure answers 500 transform-error; the target's answer is kept in the trace", async () => {
    const ctx = await admitted({
      response: [await loaded("response", "t-bad", "export default (c, q, r) => ({ ...r, status: 99 })")],
    });
    const answer = await transformResponse(ctx, await answered(ctx), recordingRunner().deps);
    expect(answer.response.status).toBe(500);
    expect(answer.outcome).toEqual({
      code: "transform-error",
      message: "Response transform t-bad failed (invalid): status must be an integer from 200 to 599",
    });
    expect(ctx.target?.status).toBe(200);
    expect(ctx.transforms?.response).toBeUndefined();
  });

  it("a kill that suspends the transform is kept for the request log; the suspended calls answer at once", async () => {
    const now = Date.UTC(2026, 10, 26, 12);
    sandboxTestHooks.setSuspensionClock(() => now);
    try {
      const bomb = await loaded(
        "response",
        "t-bomb",
        "export default (c, q, r) => { new Array(1e6).fill(7).join(','); return r }",
      );
      const outcomes: string[] = [];
      const suspensions: unknown[] = [];
      for (let i = 0; i < 4; i++) {
        await warmSandbox();
        const ctx = await admitted({ response: [bomb] });
        const answer = await transformResponse(ctx, await answered(ctx), recordingRunner().deps);
        expect(answer.response.status).toBe(500);
        outcomes.push(answer.outcome.message.replace(/: .*/, ""));
        suspensions.push(ctx.transforms?.suspension);
      }
      expect(outcomes).toEqual([
        "Response transform t-bomb failed (timeout)",
        "Response transform t-bomb failed (timeout)",
        "Response transform t-bomb failed (timeout)",
        "Response transform t-bomb failed (suspended)",
      ]);
      // Only the call whose kill started the suspension carries it (one notification).
      expect(suspensions).toEqual([
        undefined,
        undefined,
        { transformId: "t-bomb", kind: "response", until: "2026-11-26T12:01:00.000Z", cooldownMs: 60_000 },
        undefined,
      ]);
    } finally {
      sandboxTestHooks.setSuspensionClock(undefined);
      sandboxTestHooks.clearSuspensions();
    }
  });

  it("does not run when the target did not answer", async () => {
    const ctx = await admitted({
      response: [await loaded("response", "t", "export default () => { throw new Error('ran') }")],
    });
    const refused: Answer = {
      response: { status: 502, headers: {}, body: Buffer.alloc(0) },
      outcome: { code: "proxy-access-granted", message: "The target could not be reached" },
    };
    expect(await transformResponse(ctx, refused, recordingRunner().deps)).toBe(refused);
  });
});
