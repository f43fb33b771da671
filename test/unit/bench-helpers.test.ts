/** The bundled-handler bench's pure helpers (bench/function-url-front.ts, bench/profile-summary.ts). */
import { describe, expect, it } from "vitest";
import {
  attributeCalls,
  functionUrlEvent,
  operationOf,
  perInvocation,
} from "../../bench/function-url-front.ts";
import {
  type CpuProfile,
  decodeMappings,
  decodeVlq,
  groupOfSource,
  sdkAreaOf,
  sourceAt,
  summariseProfile,
} from "../../bench/profile-summary.ts";

describe("functionUrlEvent", () => {
  const base = {
    method: "POST",
    url: "/api/p1/items?page=1&x=a%20b#frag",
    rawHeaders: ["Host", "gw.test", "X-Api-Key", "k", "Accept", "a", "accept", "b", "Cookie", "s=1; t=2"],
    body: Buffer.from("{}"),
    sourceIp: "::ffff:10.0.0.7",
    httpVersion: "1.1",
    apiId: "bench",
    requestId: "r-1",
    now: Date.UTC(2026, 0, 2, 3, 4, 5),
  };

  it("builds the payload 2.0 event a function URL sends", () => {
    const event = functionUrlEvent(base);
    expect(event.version).toBe("2.0");
    expect(event.rawPath).toBe("/api/p1/items");
    expect(event.rawQueryString).toBe("page=1&x=a%20b");
    expect(event.headers).toEqual({ host: "gw.test", "x-api-key": "k", accept: "a,b" });
    expect(event.cookies).toEqual(["s=1", "t=2"]);
    expect(event.isBase64Encoded).toBe(true);
    expect(Buffer.from(event.body!, "base64").toString()).toBe("{}");
    expect(event.requestContext.http).toMatchObject({
      method: "POST",
      path: "/api/p1/items",
      sourceIp: "10.0.0.7",
    });
    expect(event.requestContext.time).toBe("2026-01-02T03:04:05.000Z");
    expect(event.requestContext.requestId).toBe("r-1");
  });

  it("leaves out the body and cookies when there are none", () => {
    const event = functionUrlEvent({ ...base, url: "/", rawHeaders: [], body: Buffer.alloc(0) });
    expect(event.body).toBeUndefined();
    expect(event.cookies).toBeUndefined();
    expect(event.isBase64Encoded).toBe(false);
    expect(event.rawQueryString).toBe("");
  });
});

describe("store calls around the answer", () => {
  it("names operations from X-Amz-Target", () => {
    expect(operationOf("DynamoDB_20120810.GetItem", "POST")).toBe("GetItem");
    expect(operationOf("TrentService.Decrypt", "POST")).toBe("kms:Decrypt");
    expect(operationOf(undefined, "GET")).toBe("GET (no X-Amz-Target)");
  });

  it("splits calls at each invocation's answer, and counts the rest as outside", () => {
    const invocations: [number, number, number][] = [
      [200, 260, 300],
      [100, 150, 180],
    ];
    const split = attributeCalls(
      [
        ["GetItem", 110],
        ["TransactWriteItems", 140],
        ["PutItem", 170],
        ["UpdateItem", 190], // between the invocations
        ["TransactWriteItems", 210],
        ["PutItem", 270],
        ["UpdateItem", 350], // after the last
        ["GetItem", 50], // before the first
      ],
      invocations,
    );
    expect(split.invocations).toBe(2);
    expect(Object.fromEntries(split.before)).toEqual({ GetItem: 1, TransactWriteItems: 2 });
    expect(Object.fromEntries(split.after)).toEqual({ PutItem: 2 });
    expect(Object.fromEntries(split.outside)).toEqual({ UpdateItem: 2, GetItem: 1 });
    expect(perInvocation(split.before, 2)).toBe("GetItem 0.50, TransactWriteItems 1.00");
    expect(perInvocation(new Map(), 2)).toBe("none");
  });
});

describe("profile summary", () => {
  it("decodes base64 VLQ", () => {
    expect(decodeVlq("AAAA")).toEqual([0, 0, 0, 0]);
    expect(decodeVlq("CAAC")).toEqual([1, 0, 0, 1]);
    expect(decodeVlq("D")).toEqual([-1]);
    expect(decodeVlq("gB")).toEqual([16]);
    expect(decodeVlq("hB")).toEqual([-16]);
  });

  it("maps a generated position to its source file and line", () => {
    // Line 0: column 0 → source 0 line 0; column 10 → source 1 line 4. Line 1: column 2 → source 0
    // line 6 (source index and line are relative to the previous segment, across lines).
    const lines = decodeMappings("AAAA,UCIA;EDEA");
    expect(lines).toEqual([
      [
        [0, 0, 0],
        [10, 1, 4],
      ],
      [[2, 0, 6]],
    ]);
    const map = { sources: ["node_modules/@smithy/core/a.js", "lib/data-plane/b.ts"], lines };
    expect(sourceAt(map, 0, 5)).toEqual({ source: "node_modules/@smithy/core/a.js", line: 1 });
    expect(sourceAt(map, 0, 12)).toEqual({ source: "lib/data-plane/b.ts", line: 5 });
    expect(sourceAt(map, 1, 3)).toEqual({ source: "node_modules/@smithy/core/a.js", line: 7 });
    expect(sourceAt(map, 5, 0)).toBeUndefined();
  });

  it("groups sources by package or repository folder", () => {
    expect(groupOfSource("node_modules/@smithy/core/dist-es/x.js")).toBe("@smithy/core");
    expect(groupOfSource("node_modules/zod/v4/core/x.js")).toBe("zod");
    expect(groupOfSource("lib/data-plane/stages/count.ts")).toBe("lib/data-plane");
    expect(groupOfSource("functions/data-plane.ts")).toBe("functions");
    expect(sdkAreaOf("node_modules/@smithy/core/dist-es/submodules/endpoints/middleware-endpoint/x.js")).toBe(
      "@smithy/core endpoints/middleware-endpoint",
    );
    expect(sdkAreaOf("node_modules/@smithy/core/dist-es/submodules/serde/x.js")).toBe("@smithy/core serde");
    expect(sdkAreaOf("node_modules/@aws-sdk/core/dist-es/x.js")).toBe("@aws-sdk/core");
    expect(sdkAreaOf("lib/aws/clients.ts")).toBeUndefined();
  });

  it("sums self time by group and part, idle excluded", () => {
    const frame = (functionName: string, url: string, columnNumber = 0) => ({
      functionName,
      url,
      lineNumber: 0,
      columnNumber,
    });
    const profile: CpuProfile = {
      nodes: [
        { id: 1, callFrame: frame("(root)", ""), children: [2, 3, 4, 6, 7] },
        { id: 2, callFrame: frame("(idle)", "") },
        { id: 3, callFrame: frame("a", "file:///b/index.mjs", 1), children: [5] },
        { id: 4, callFrame: frame("b", "file:///b/index.mjs", 12) },
        { id: 5, callFrame: frame("emit", "node:events") },
        { id: 6, callFrame: frame("front", "file:///b/bench-child.mjs") },
        { id: 7, callFrame: frame("(garbage collector)", "") },
      ],
      // Each sample's time is the next delta.
      samples: [2, 3, 3, 4, 5, 6, 7, 2],
      timeDeltas: [0, 1000, 100, 100, 200, 50, 25, 25],
    };
    const map = {
      sources: ["node_modules/@smithy/core/a.js", "lib/data-plane/b.ts"],
      lines: decodeMappings("AAAA,UCIA"),
    };
    const summary = summariseProfile(profile, "file:///b/bench-child.mjs", (url) =>
      url === "file:///b/index.mjs" ? map : undefined,
    );
    expect(summary.busyUs).toBe(100 + 100 + 200 + 50 + 25 + 25);
    expect(Object.fromEntries(summary.groups)).toEqual({
      "@smithy/core": 200,
      "lib/data-plane": 200,
      "node internals": 50,
      "the front (bench)": 25,
      "(garbage collector)": 25,
    });
    expect(Object.fromEntries(summary.parts)).toMatchObject({ "AWS SDK: @smithy/*": 200, GC: 25 });
    // node:events called from the SDK counts for the SDK inclusively.
    expect(Object.fromEntries(summary.inclusiveParts)).toMatchObject({
      "AWS SDK: @smithy/*": 250,
      "AWS SDK (any package)": 250,
      "node internals (http, streams, net, timers)": 50,
      "lib/data-plane": 200,
    });
    expect(summary.sdkAreas).toEqual([["@smithy/core", 200]]);
    expect(summary.functions[0]).toEqual(["@smithy/core/a.js:1 a", 200]);
  });
});
