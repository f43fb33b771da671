/**
 * The pipeline (lib/data-plane/pipeline.ts) with its dependencies injected: the configuration
 * loader, the count transaction, the single-use claims, the target call and the write after the
 * answer. The real stage functions, caller authentication, request-log builder and meter plan run
 * as deployed; the target call is the real outbound client against a loopback server where the
 * test is about a success. Checked: the order of stages, the confirmation of a cached denial, the
 * stale-count retry, the one claim settlement and the one log write on every path, the 500.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DataPlaneRequest } from "#lib/data-plane/context.ts";
import type { CounterStep } from "#lib/data-plane/counters.ts";
import { createDataPlane, type PipelineDeps } from "#lib/data-plane/pipeline.ts";
import type { LoadedRuntime, ProxyRuntime } from "#lib/data-plane/runtime-config.ts";
import type { SingleUseClaims } from "#lib/data-plane/stages/claim.ts";
import type { TakeOutcome } from "#lib/data-plane/stages/count.ts";
import {
  closeOutboundAgents,
  OutboundConnectError,
  type OutboundResponse,
  OutboundTimeoutError,
  sendOutbound,
} from "#lib/net/outbound.ts";
import {
  CALLER_KEY,
  callerCredential,
  meter,
  NOW,
  PROXY_ID,
  type RuntimeOptions,
  request,
  runtime,
} from "../../unit/stages/fixtures.ts";

const REGION = "us-east-1";
let target: Server;
let targetBase: string;
const targetSaw: { method: string; url: string; headers: Record<string, unknown> }[] = [];
const loopbackBefore = process.env.OUTBOUND_ALLOW_LOOPBACK;

beforeAll(async () => {
  process.env.OUTBOUND_ALLOW_LOOPBACK = "true";
  target = createServer((req, res) => {
    targetSaw.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json", "x-upstream": "yes" });
      res.end(JSON.stringify({ ok: true, usage: { tokens: 17 } }));
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  if (loopbackBefore === undefined) delete process.env.OUTBOUND_ALLOW_LOOPBACK;
  else process.env.OUTBOUND_ALLOW_LOOPBACK = loopbackBefore;
  await closeOutboundAgents();
  target.closeAllConnections();
  await new Promise((resolve) => target.close(resolve));
});

const OK: OutboundResponse = {
  status: 200,
  headers: { "content-type": "application/json" },
  body: Buffer.from('{"ok":true}'),
  truncated: false,
  timings: { startedAt: NOW, headersAt: NOW, endedAt: NOW },
  url: "https://target.example/v1/items/42",
};

interface Harness {
  plane: ReturnType<typeof createDataPlane>;
  loads: boolean[];
  /** The freshness checks of the count stage, in order. */
  checks: { clientId: string; version: number; fresh: boolean }[];
  /** The steps of each take from the limited counters (the names), in order. */
  takes: string[][];
  /** Takes given back (a stale configuration). */
  restored: number;
  /** The units each reserving step asked for, in order. */
  reserves: number[];
  /** Reservations settled after the answer: the step and the real value. */
  settles: [string, number][];
  claims: string[];
  writes: {
    item: Record<string, unknown> | undefined;
    settlement: readonly CounterStep[];
    systemError: boolean | undefined;
    counted: boolean;
  }[];
}

interface HarnessOptions {
  /** The configuration the loader answers: per revalidate flag, or one for both (fresh when revalidated). */
  load?: (revalidate: boolean) => LoadedRuntime | undefined;
  runtime?: ProxyRuntime;
  /** Whether the configuration is current (default: yes). */
  current?: (check: { version: number; fresh: boolean }) => boolean;
  /** What the limited counters answer (default: taken); may throw. */
  take?: () => { refused: string[] } | "taken";
  send?: PipelineDeps["send"];
  claimGranted?: boolean;
  writeAfter?: PipelineDeps["writeAfter"];
}

function harness(options: HarnessOptions = {}): Harness {
  const rt = options.runtime ?? runtime();
  const h: Omit<Harness, "plane"> = {
    loads: [],
    checks: [],
    takes: [],
    restored: 0,
    reserves: [],
    settles: [],
    claims: [],
    writes: [],
  };
  const claims: SingleUseClaims = {
    claim: async (clientId, credentialId) => {
      h.claims.push(`claim ${clientId}/${credentialId}`);
      return options.claimGranted ?? true;
    },
    release: async () => {
      h.claims.push("release");
    },
    consume: async () => {
      h.claims.push("consume");
    },
  };
  let clock = NOW;
  const plane = createDataPlane(REGION, {
    now: () => clock++,
    loadRuntime: async (proxyId, { revalidate }) => {
      expect(proxyId).toBe(PROXY_ID);
      h.loads.push(revalidate);
      return options.load ? options.load(revalidate) : { runtime: rt, fresh: revalidate };
    },
    counting: {
      isCurrent: async (clientId, version, fresh) => {
        h.checks.push({ clientId, version, fresh });
        return options.current ? options.current({ version, fresh }) : true;
      },
      take: async (steps): Promise<TakeOutcome> => {
        h.takes.push(steps.map((step) => step.name));
        for (const step of steps) if (step.mode === "reserve") h.reserves.push(step.amount);
        const outcome = options.take ? options.take() : "taken";
        if (outcome !== "taken") return outcome;
        const restore = () => {
          h.restored++;
        };
        const settle = (name: string, value: number) => {
          h.settles.push([name, value]);
          return 0;
        };
        return { taken: { restore, settle, topUp: async () => undefined } };
      },
    },
    claims,
    send: options.send ?? (async () => OK),
    writeAfter:
      options.writeAfter ??
      (async (region, ctx, item, settlement) => {
        expect(region).toBe(REGION);
        h.writes.push({ item, settlement, systemError: ctx.validation.systemError, counted: ctx.counted });
      }),
  });
  return Object.assign(h, { plane });
}

const call = (plane: Harness["plane"], overrides: Partial<DataPlaneRequest> = {}) =>
  plane.handle(request(overrides));

describe("createDataPlane: the order of stages", () => {
  it("a success: one load (cached), one count with the version check, the target, one log write", async () => {
    const rt = runtime({ target: { targetBaseURL: targetBase }, version: 5 });
    const h = harness({ runtime: rt, send: sendOutbound });
    targetSaw.length = 0;
    const response = await call(h.plane, { rawQuery: "q=1" });
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body.toString())).toEqual({ ok: true, usage: { tokens: 17 } });
    expect(response.headers).toMatchObject({
      "content-type": "application/json",
      "x-upstream": "yes",
      "service-proxy-code": "proxy-access-granted",
      "service-proxy-message": "Request forwarded to the target",
      "x-request-id": expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(targetSaw).toEqual([expect.objectContaining({ method: "GET", url: "/v1/items/42?q=1" })]);
    expect(targetSaw[0]?.headers).toMatchObject({ authorization: expect.stringMatching(/^Bearer /) });
    expect(targetSaw[0]?.headers["x-api-key"]).toBeUndefined();
    expect(h.loads).toEqual([false]);
    const requestId = response.headers["x-request-id"]!;
    expect(h.checks).toEqual([{ clientId: rt.clientId, version: 5, fresh: false }]);
    expect(h.takes).toEqual([["rate"]]);
    expect(h.writes).toHaveLength(1);
    expect(h.writes[0]).toMatchObject({ settlement: [], systemError: undefined, counted: true });
    expect(h.writes[0]?.item).toMatchObject({
      requestId,
      proxyId: PROXY_ID,
      processed: true,
      proxyData: { status: 200, method: "GET", apiPath: "/items/42" },
      targetData: { status: 200 },
      validationData: {
        proxyExists: true,
        proxyAuthenticated: true,
        responseReceived: true,
        systemError: false,
      },
    });
    expect(h.claims).toEqual([]);
  });

  it("meters: the settlement (response values, unlimited windows) goes to the one write after the answer", async () => {
    const meters = [
      meter("m-value", {
        meterType: "response_value",
        meterActive: true,
        limits: { hour: 1000 },
        extraction: { location: "body", path: "usage.tokens" },
      }),
      meter("m-limited", { meterType: "request_count", meterActive: true, limits: { minute: 5 } }),
    ];
    const h = harness({
      runtime: runtime({ target: { targetBaseURL: targetBase }, meters }),
      send: sendOutbound,
    });
    const response = await call(h.plane);
    expect(response.status).toBe(200);
    expect(h.takes).toEqual([["rate", "meter:m-value:hour", "meter:m-limited:minute"]]);
    expect(h.writes).toHaveLength(1);
    // The limited windows took their units from the leases before the target; after the answer
    // every window's `value` gets the admitted count (the value, and 1), and the reservation (the
    // whole limit: no value of the meter was known yet) is settled at the value.
    const settled = (write: number) =>
      h.writes[write]?.settlement.map((step) => [step.name, step.mode, step.amount, step.leaseDelta]);
    expect(h.reserves).toEqual([1000]);
    expect(settled(0)).toEqual([
      ["settle:m-value:hour", "add", 17, undefined],
      ["settle:m-limited:minute", "add", 1, undefined],
    ]);
    expect(h.settles).toEqual([["meter:m-value:hour", 17]]);
    expect(h.writes[0]?.item?.metering).toEqual({ applied: ["m-value", "m-limited"], refused: [] });
    // The next request reserves the mean value (17); one whose target fails settles it at 0.
    expect((await call(h.plane)).status).toBe(200);
    expect(h.reserves).toEqual([1000, 17]);
    expect(settled(1)).toEqual([
      ["settle:m-value:hour", "add", 17, undefined],
      ["settle:m-limited:minute", "add", 1, undefined],
    ]);
    const failing = harness({
      runtime: runtime({ target: { targetBaseURL: targetBase }, meters }),
      send: async () => {
        throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      },
    });
    expect((await call(failing.plane)).status).toBeGreaterThanOrEqual(500);
    expect(failing.reserves).toEqual([17]);
    expect(failing.settles).toEqual([["meter:m-value:hour", 0]]);
    expect(failing.writes[0]?.settlement.map((step) => [step.name, step.amount])).toEqual([
      ["settle:m-limited:minute", 1],
    ]);
  });

  it("serve() hands the answer back before anything is written; finish() then writes once", async () => {
    const h = harness();
    const served = await h.plane.serve(request());
    expect(served.response.status).toBe(200);
    expect(h.writes).toHaveLength(0);
    await served.finish();
    expect(h.writes).toHaveLength(1);
  });

  it("finish() never rejects, even when the write does", async () => {
    const h = harness({ writeAfter: async () => Promise.reject(new Error("store down")) });
    const served = await h.plane.serve(request());
    await expect(served.finish()).resolves.toBeUndefined();
  });

  it("a malformed request is refused before any load, and still written once (nothing to file it under)", async () => {
    const h = harness();
    const response = await call(h.plane, { method: "TRACE" });
    expect(response.status).toBe(405);
    expect(response.headers).toMatchObject({ allow: expect.any(String), "x-request-id": expect.any(String) });
    expect(h.loads).toEqual([]);
    expect(h.writes).toEqual([{ item: undefined, settlement: [], systemError: undefined, counted: false }]);
  });
});

describe("createDataPlane: an internal error", () => {
  it("thrown by the target call: 500 proxy-error with the service headers and x-request-id, logged with systemError", async () => {
    const h = harness({
      send: async () => {
        throw new TypeError("a defect");
      },
    });
    const response = await call(h.plane);
    expect(response.status).toBe(500);
    expect(response.headers).toMatchObject({
      "service-proxy-code": "proxy-error",
      "service-proxy-message": "Internal error of the gateway",
      "x-request-id": expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(JSON.parse(response.body.toString())).toEqual({
      code: "proxy-error",
      message: "Internal error of the gateway",
    });
    expect(h.writes).toHaveLength(1);
    expect(h.writes[0]?.systemError).toBe(true);
    expect(h.writes[0]?.item).toMatchObject({
      requestId: response.headers["x-request-id"],
      proxyData: { status: 500, message: "Internal error of the gateway" },
      validationData: { systemError: true, requestSent: true, responseReceived: false },
      processed: false,
    });
  });

  it("a store that is unavailable (here the count) answers 503, logged with systemError", async () => {
    const timeout = Object.assign(new Error("timed out"), { name: "TimeoutError" });
    const h = harness({
      take: () => {
        throw timeout;
      },
    });
    const response = await call(h.plane);
    expect(response.status).toBe(503);
    expect(response.headers["service-proxy-code"]).toBe("proxy-error");
    expect(response.headers["service-proxy-message"]).toMatch(/store is unavailable/);
    expect(h.writes).toHaveLength(1);
    expect(h.writes[0]).toMatchObject({ systemError: true, counted: false });
    expect(h.writes[0]?.item).toMatchObject({ proxyData: { status: 503 } });
  });

  it("thrown while loading the configuration: 500, one write with no item (no proxy known)", async () => {
    const h = harness({
      load: () => {
        throw new Error("cannot parse a stored item");
      },
    });
    const response = await call(h.plane);
    expect(response.status).toBe(500);
    expect(response.headers["x-request-id"]).toBeDefined();
    expect(h.writes).toEqual([{ item: undefined, settlement: [], systemError: true, counted: false }]);
  });
});

describe("createDataPlane: decisions on a cached configuration", () => {
  const inactive = runtime({ proxy: { proxyActive: false } });
  const active = runtime();

  it("a denial on a cached configuration is confirmed by reloading with revalidate: allowed now", async () => {
    const h = harness({
      load: (revalidate) =>
        revalidate ? { runtime: active, fresh: true } : { runtime: inactive, fresh: false },
    });
    const response = await call(h.plane);
    expect(response.status).toBe(200);
    expect(h.loads).toEqual([false, true]);
    expect(h.takes).toHaveLength(1);
    expect(h.writes).toHaveLength(1);
    // The record is of the attempt that decided: no trace of the cached denial.
    expect(h.writes[0]?.item).toMatchObject({ validationData: { proxyActive: true } });
  });

  it("a denial confirmed on the current configuration is answered; nothing counted", async () => {
    const h = harness({
      load: (revalidate) => ({ runtime: inactive, fresh: revalidate }),
    });
    const response = await call(h.plane);
    expect(response.status).toBe(403);
    expect(response.headers["service-proxy-message"]).toBe("The proxy is inactive");
    expect(h.loads).toEqual([false, true]);
    expect(h.takes).toEqual([]);
    expect(h.writes).toHaveLength(1);
  });

  it("a denial on a fresh configuration is answered at once", async () => {
    const h = harness({ load: () => ({ runtime: inactive, fresh: true }) });
    expect((await call(h.plane)).status).toBe(403);
    expect(h.loads).toEqual([false]);
  });

  it("a stale count gives its units back, reloads and counts again", async () => {
    let stale = 1;
    const h = harness({ current: () => stale-- <= 0 });
    const response = await call(h.plane);
    expect(response.status).toBe(200);
    expect(h.loads).toEqual([false, true]);
    expect(h.checks.map((check) => check.fresh)).toEqual([false, true]);
    expect(h.takes).toHaveLength(2);
    expect(h.restored).toBe(1);
    expect(h.writes[0]?.counted).toBe(true);
  });

  it("after 3 stale counts the request is decided on the configuration just loaded, without the check", async () => {
    const h = harness({
      load: (revalidate) => ({ runtime: runtime({ version: 9 }), fresh: revalidate }),
      // The version keeps moving: stale whenever the version is checked.
      current: () => false,
    });
    const response = await call(h.plane);
    expect(response.status).toBe(200);
    expect(h.loads).toEqual([false, true, true, true]);
    expect(h.checks).toEqual([
      { clientId: "client-1", version: 9, fresh: false },
      { clientId: "client-1", version: 9, fresh: true },
      { clientId: "client-1", version: 9, fresh: true },
    ]);
    expect(h.takes).toHaveLength(4);
    expect(h.restored).toBe(3);
    expect(h.writes).toHaveLength(1);
    expect(h.writes[0]?.counted).toBe(true);
  });

  it("a refused count answers 429; the request is logged, not counted, and settles nothing", async () => {
    const h = harness({
      runtime: runtime({
        meters: [meter("m", { meterType: "request_count", meterActive: true, limits: { minute: 1 } })],
      }),
      take: () => ({ refused: ["meter:m:minute"] }),
    });
    const response = await call(h.plane);
    expect(response.status).toBe(429);
    expect(response.headers["service-proxy-code"]).toBe("meter-limit-exceeded");
    expect(h.writes).toHaveLength(1);
    expect(h.writes[0]).toMatchObject({ settlement: [], counted: false });
    expect(h.writes[0]?.item?.metering).toEqual({
      applied: ["m"],
      refused: [{ meterId: "m", window: "minute" }],
    });
  });
});

describe("createDataPlane: a single-use credential is settled exactly once on every path", () => {
  const singleUse = (options: RuntimeOptions = {}) =>
    runtime({ ...options, proxyCredential: callerCredential({ singleUse: true }) });
  const failing = (error: Error) => async () => Promise.reject(error);

  const paths: [string, HarnessOptions, number, string[]][] = [
    ["the target answers 200", {}, 200, ["claim client-1/cred-caller", "consume"]],
    [
      "the target answers 500 (its own)",
      { send: async () => ({ ...OK, status: 500 }) },
      500,
      ["claim client-1/cred-caller", "release"],
    ],
    [
      "the target times out",
      { send: failing(new OutboundTimeoutError("target.example", 30_000)) },
      504,
      ["claim client-1/cred-caller", "release"],
    ],
    [
      "the target is unreachable",
      { send: failing(new OutboundConnectError("target.example", "ECONNREFUSED")) },
      502,
      ["claim client-1/cred-caller", "release"],
    ],
    [
      "the response is too large",
      { send: async () => ({ ...OK, truncated: true }) },
      413,
      ["claim client-1/cred-caller", "release"],
    ],
    [
      "an internal error after the claim",
      { send: failing(new TypeError("a defect")) },
      500,
      ["claim client-1/cred-caller", "release"],
    ],
    ["the claim is refused (already used)", { claimGranted: false }, 403, ["claim client-1/cred-caller"]],
    ["refused before forward (429)", { take: () => ({ refused: ["rate"] }) }, 429, []],
  ];

  for (const [name, options, status, claims] of paths) {
    it(name, async () => {
      const h = harness({ runtime: singleUse(), ...options });
      const response = await call(h.plane);
      expect(response.status).toBe(status);
      expect(h.claims).toEqual(claims);
      expect(h.writes).toHaveLength(1);
    });
  }

  it("a rule denial on the caller: no claim at all", async () => {
    const h = harness({ runtime: singleUse({ proxy: { proxyDefaultRuleEffect: "deny" } }) });
    expect((await call(h.plane)).status).toBe(403);
    expect(h.claims).toEqual([]);
    expect(h.writes).toHaveLength(1);
  });

  it("the wrong key: no claim", async () => {
    const h = harness({ runtime: singleUse() });
    const response = await call(h.plane, { headers: { "x-api-key": `${CALLER_KEY}x` } });
    expect(response.status).toBe(403);
    expect(h.claims).toEqual([]);
  });
});
