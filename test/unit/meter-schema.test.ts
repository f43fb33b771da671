/** Meter validation (spec 2.9, 4.9; docs/meters.md "API") as pure functions: every 400 names its field. */
import { describe, expect, it } from "vitest";
import { meterItemOf, meterKeys } from "#lib/db/entities/meter.ts";
import {
  CreateMeterBody,
  MAX_METERS_PER_PROXY,
  type MeterConfig,
  mergeMeterUpdate,
  meterConfigOf,
  meterConfigProblems,
  normaliseMeter,
  UpdateMeterBody,
} from "#lib/domain/meter-schema.ts";
import { parseInput } from "#lib/http/validation.ts";
import { DomainError } from "#lib/shared/errors.ts";

const base = { meterType: "request_count", meterActive: true } as const;

/** The fields a create body is refused for (empty when accepted). */
function refused(body: unknown): string[] {
  try {
    parseInput(CreateMeterBody, body);
    return [];
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return error.details.fields as string[];
  }
}

describe("create: the 400s of issue 9, each naming the field", () => {
  it.each([
    ["missing meterType", { meterActive: true }, "meterType"],
    ["missing meterActive", { meterType: "request_count" }, "meterActive"],
    ["unknown meterType", { ...base, meterType: "bytes" }, "meterType"],
    ["meterActive not a boolean", { ...base, meterActive: "yes" }, "meterActive"],
    ["response_value without extraction", { ...base, meterType: "response_value" }, "extraction"],
    [
      "extraction body without path",
      { ...base, meterType: "response_value", extraction: { location: "body" } },
      "extraction.path",
    ],
    [
      "extraction header without headerName",
      { ...base, meterType: "response_value", extraction: { location: "header" } },
      "extraction.headerName",
    ],
    ["unknown extraction.location", { ...base, extraction: { location: "query" } }, "extraction.location"],
    ["a zero limit", { ...base, limits: { minute: 0 } }, "limits.minute"],
    ["a negative limit", { ...base, limits: { hour: -5 } }, "limits.hour"],
    ["a limit that is a string", { ...base, limits: { day: "10" } }, "limits.day"],
    ["a null limit window", { ...base, limits: { month: null } }, "limits.month"],
    ["an unknown limit window", { ...base, limits: { week: 5 } }, "limits.week"],
    [
      "alerts enabled without cadence",
      { ...base, alerts: { enabled: true, notifyTrigger: "exceed" } },
      "alerts.cadence",
    ],
    [
      "alerts enabled without notifyTrigger",
      { ...base, alerts: { enabled: true, cadence: "hour" } },
      "alerts.notifyTrigger",
    ],
    [
      "threshold without alertThreshold",
      { ...base, alerts: { enabled: true, cadence: "hour", notifyTrigger: "threshold" } },
      "alerts.alertThreshold",
    ],
    [
      "threshold with no positive window",
      {
        ...base,
        alerts: {
          enabled: true,
          cadence: "hour",
          notifyTrigger: "threshold",
          alertThreshold: { hour: null },
        },
      },
      "alerts.alertThreshold",
    ],
    [
      "threshold with a zero window",
      {
        ...base,
        alerts: { enabled: true, cadence: "hour", notifyTrigger: "threshold", alertThreshold: { hour: 0 } },
      },
      "alerts.alertThreshold.hour",
    ],
    ["conditional without effect", { ...base, meterMode: "conditional" }, "effect"],
    ["conditional with effect null", { ...base, meterMode: "conditional", effect: null }, "effect"],
    ["conditional with effect allow", { ...base, meterMode: "conditional", effect: "allow" }, "effect"],
    ["unknown meterMode", { ...base, meterMode: "some" }, "meterMode"],
    ["limitBy without variables", { ...base, limitBy: "sub" }, "limitBy"],
    [
      "limitBy naming no variable",
      { ...base, variables: [{ name: "customer", source: "header", key: "x-customer" }], limitBy: "sub" },
      "limitBy",
    ],
    ["an unknown field", { ...base, meterName: "x" }, "meterName"],
    ["a predicate of the wrong shape", { ...base, headers: [{ pattern: "x" }] }, "headers.0.name"],
    ["an invalid predicate pattern", { ...base, path: { pattern: "(" } }, "path.pattern"],
  ])("%s", (_what, body, field) => {
    expect(refused(body)).toContain(field);
  });

  it("one 400 names every failing field", () => {
    expect(refused({ meterType: "bytes", limits: { minute: -1 } })).toEqual(
      expect.arrayContaining(["meterType", "meterActive", "limits.minute"]),
    );
  });
});

describe("create: accepted bodies and the canonical shape", () => {
  it("fills the defaults: meterMode all, nulls and empty predicates", () => {
    expect(normaliseMeter(parseInput(CreateMeterBody, base))).toEqual({
      meterType: "request_count",
      meterActive: true,
      meterMode: "all",
      effect: null,
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
    });
  });

  it("keeps a full meter, lower-cases header names, drops empty threshold windows and {} limits", () => {
    const body = {
      meterType: "response_value",
      meterActive: true,
      meterMode: "conditional",
      effect: "exclude",
      limits: { minute: 10, month: 2.5 },
      extraction: { location: "header", headerName: "X-Tokens", defaultValue: 0 },
      methods: ["post", "POST"],
      headers: [{ name: "X-Tier", pattern: "^free$" }],
      variables: [{ name: "sub", source: "token", key: "sub" }],
      limitBy: "sub",
      alerts: {
        enabled: true,
        cadence: "day",
        notifyTrigger: "threshold",
        alertThreshold: { minute: null, day: 100 },
      },
      notes: "  tokens  ",
    };
    const config = normaliseMeter(parseInput(CreateMeterBody, body));
    expect(config).toMatchObject({
      limits: { minute: 10, month: 2.5 },
      extraction: { location: "header", headerName: "x-tokens", defaultValue: 0 },
      methods: ["POST"],
      headers: [{ name: "x-tier", pattern: "^free$", presence: "present" }],
      limitBy: "sub",
      alerts: { enabled: true, cadence: "day", notifyTrigger: "threshold", alertThreshold: { day: 100 } },
      notes: "tokens",
    });
    expect(normaliseMeter(parseInput(CreateMeterBody, { ...base, limits: {} })).limits).toBeNull();
  });

  it("accepts disabled alerts without cadence, and an effect on a meter of mode all", () => {
    expect(refused({ ...base, alerts: { enabled: false } })).toEqual([]);
    expect(refused({ ...base, effect: "include" })).toEqual([]);
  });
});

describe("partial update: the merged meter is what is validated", () => {
  const stored: MeterConfig = normaliseMeter(
    parseInput(CreateMeterBody, {
      ...base,
      limits: { minute: 5 },
      variables: [{ name: "sub", source: "token", key: "sub" }],
      limitBy: "sub",
      notes: "kept",
    }),
  );
  const merged = (body: unknown) => mergeMeterUpdate(stored, parseInput(UpdateMeterBody, body));

  it("keeps omitted fields and replaces given ones (objects as a whole)", () => {
    const next = merged({ limits: { hour: 50 }, meterActive: false });
    expect(next).toMatchObject({ limits: { hour: 50 }, meterActive: false, notes: "kept", limitBy: "sub" });
    expect(meterConfigProblems(next)).toEqual([]);
  });

  it("null clears an optional field back to its default", () => {
    expect(merged({ limits: null, notes: null, limitBy: null })).toMatchObject({
      limits: null,
      notes: "",
      limitBy: null,
    });
    expect(merged({ variables: null, limitBy: null }).variables).toEqual([]);
  });

  it("refuses a change that leaves the whole meter invalid, naming the field", () => {
    const fields = (body: unknown) => meterConfigProblems(merged(body)).map((p) => p.field);
    expect(fields({ meterType: "response_value" })).toEqual(["extraction"]);
    expect(fields({ meterMode: "conditional" })).toEqual(["effect"]);
    expect(fields({ variables: [] })).toEqual(["limitBy"]);
    expect(fields({ alerts: { enabled: true } })).toEqual(["alerts.cadence", "alerts.notifyTrigger"]);
    expect(
      fields({ meterType: "response_value", extraction: { location: "body", path: "usage.total" } }),
    ).toEqual([]);
  });

  it("refuses null for the required fields and unknown fields", () => {
    expect(UpdateMeterBody.safeParse({ meterType: null }).success).toBe(false);
    expect(UpdateMeterBody.safeParse({ meterActive: null }).success).toBe(false);
    expect(UpdateMeterBody.safeParse({ meterId: "x" }).success).toBe(false);
    expect(UpdateMeterBody.safeParse({}).success).toBe(true);
  });
});

describe("the meter entity", () => {
  const item = {
    ...meterKeys.item("c", "p", "m"),
    entity: "meter",
    meterId: "m",
    proxyId: "p",
    clientId: "c",
    userId: "u",
    parentId: "p",
    meterRegion: "us-east-1",
    ...normaliseMeter(parseInput(CreateMeterBody, base)),
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
    meterVersion: 1,
  };

  it("reads a stored meter as typed fields, and refuses one that is not, naming the field", () => {
    expect(meterItemOf(item)).toEqual(item);
    expect(() => meterItemOf({ ...item, meterType: "bytes" })).toThrow(/meterType/);
    expect(() => meterItemOf({ ...item, entity: "meter-count" })).toThrow(/entity/);
  });

  it("keys a meter beside its proxy, and the count among the proxy's meters", () => {
    expect(meterKeys.item("c", "p", "m")).toEqual({ pKey: "CLIENT#c", sKey: "METER#p#m" });
    expect(meterKeys.count("c", "p")).toEqual({ pKey: "CLIENT#c", sKey: "METER#p##COUNT" });
    expect(MAX_METERS_PER_PROXY).toBe(20);
  });
});

describe("meterConfigOf", () => {
  it("keeps a stored meter's configuration fields and nothing else", () => {
    const config = normaliseMeter(
      parseInput(CreateMeterBody, { ...base, limits: { day: 5 }, notes: "n", limitBy: null }),
    );
    const stored = { ...config, pKey: "CLIENT#c", sKey: "METER#p#m", createdAt: 1, configVersion: 3 };
    expect(meterConfigOf(stored)).toEqual(config);
    expect(Object.keys(meterConfigOf(stored)).sort()).toEqual(Object.keys(config).sort());
  });
});
