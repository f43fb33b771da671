/** IETF RateLimit headers of a meter refusal (lib/domain/meters/rate-limit-headers.ts). */
import { describe, expect, it } from "vitest";
import {
  availableQuota,
  meterPolicyName,
  policyItem,
  type QuotaState,
  refusalHeaders,
  serviceLimitItem,
  sfString,
} from "#lib/domain/meters/rate-limit-headers.ts";
import { callerHash, windowAt } from "#lib/shared/meter-windows.ts";

const NOW = Date.parse("2025-03-09T17:42:23Z");

const state = (overrides: Partial<QuotaState> = {}): QuotaState => ({
  name: meterPolicyName("m1", "minute"),
  limit: 100,
  used: 100,
  window: windowAt("minute", NOW),
  ...overrides,
});

/** A minimal structured-field List parser (RFC 9651) for the shapes produced here. */
function parseList(field: string): { value: string; params: Record<string, string> }[] {
  const items: { value: string; params: Record<string, string> }[] = [];
  const re =
    /\s*"((?:[^"\\]|\\.)*)"((?:;[a-z*][a-z0-9_.*-]*=(?:"(?:[^"\\]|\\.)*"|:[A-Za-z0-9+/=]*:|-?\d+))*)\s*(,|$)/gy;
  let match: RegExpExecArray | null;
  let consumed = 0;
  // biome-ignore lint/suspicious/noAssignInExpressions: a scanning loop
  while (consumed < field.length && (match = re.exec(field)) !== null) {
    const params: Record<string, string> = {};
    for (const param of match[2]!.split(";").slice(1)) {
      const [key, ...rest] = param.split("=");
      params[key!] = rest.join("=");
    }
    items.push({ value: match[1]!.replace(/\\(.)/g, "$1"), params });
    consumed = re.lastIndex;
  }
  if (consumed !== field.length) throw new Error(`not a structured list: ${field}`);
  return items;
}

describe("refusalHeaders", () => {
  it("one refused minute window", () => {
    const headers = refusalHeaders([state()], NOW);
    expect(headers).toEqual({
      ratelimit: '"m1-minute";r=0;t=37',
      "ratelimit-policy": '"m1-minute";q=100;w=60',
      "retry-after": "37",
    });
  });

  it("several refused windows: every item, Retry-After the longest wait", () => {
    const headers = refusalHeaders(
      [
        state(),
        state({ name: meterPolicyName("m1", "day"), limit: 1000, used: 1200, window: windowAt("day", NOW) }),
      ],
      NOW,
    );
    const waitDay = Math.ceil((Date.parse("2025-03-10T00:00:00Z") - NOW) / 1000);
    expect(headers["retry-after"]).toBe(String(waitDay));
    expect(parseList(headers.ratelimit)).toEqual([
      { value: "m1-minute", params: { r: "0", t: "37" } },
      { value: "m1-day", params: { r: "0", t: String(waitDay) } },
    ]);
    expect(parseList(headers["ratelimit-policy"])).toEqual([
      { value: "m1-minute", params: { q: "100", w: "60" } },
      { value: "m1-day", params: { q: "1000", w: "86400" } },
    ]);
  });

  it("a month window has the calendar month's length", () => {
    const headers = refusalHeaders([state({ window: windowAt("month", NOW), name: "m1-month" })], NOW);
    expect(parseList(headers["ratelimit-policy"])[0]!.params.w).toBe(String(31 * 86_400));
    expect(Number(headers["retry-after"])).toBe((Date.parse("2025-04-01T00:00:00Z") - NOW) / 1000);
  });

  it("a per-caller meter sends the caller hash as the partition key (Byte Sequence)", () => {
    const hash = callerHash("user-1");
    const headers = refusalHeaders([state({ partitionKey: hash })], NOW);
    const pk = `:${Buffer.from(hash, "hex").toString("base64")}:`;
    expect(parseList(headers.ratelimit)[0]!.params.pk).toBe(pk);
    expect(parseList(headers["ratelimit-policy"])[0]!.params.pk).toBe(pk);
    expect(Buffer.from(pk.slice(1, -1), "base64").toString("hex")).toBe(hash);
  });

  it("a response_value meter marks its unit; a fractional limit is rounded up", () => {
    const headers = refusalHeaders([state({ unit: "value", limit: 2.5, used: 3.1 })], NOW);
    expect(parseList(headers["ratelimit-policy"])[0]!.params).toEqual({
      q: "3",
      "pg-unit": '"value"',
      w: "60",
    });
    expect(parseList(headers.ratelimit)[0]!.params.r).toBe("0");
  });

  it("needs a refused window", () => {
    expect(() => refusalHeaders([], NOW)).toThrow();
  });
});

describe("items", () => {
  it("available quota: what is left below the limit, 0 at or above it", () => {
    expect(availableQuota({ limit: 100, used: 37 })).toBe(63);
    expect(availableQuota({ limit: 100, used: 100 })).toBe(0);
    expect(availableQuota({ limit: 100, used: 150 })).toBe(0);
    expect(availableQuota({ limit: 10, used: 9.5 })).toBe(1);
    expect(serviceLimitItem(state({ used: 37 }), NOW)).toBe('"m1-minute";r=63;t=37');
  });

  it("t is at least 1 at the very end of the window", () => {
    const window = windowAt("minute", NOW);
    expect(serviceLimitItem(state({ used: 0 }), window.end - 1)).toBe('"m1-minute";r=100;t=1');
  });

  it("policy names are sf-strings", () => {
    expect(sfString('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(sfString("é\n")).toBe('"??"');
    expect(policyItem(state({ name: 'we"ird' }))).toBe('"we\\"ird";q=100;w=60');
  });
});
