/** Predicates and variables of meters and transforms (lib/domain/predicates/evaluate.ts, dot-path.ts). */
import { describe, expect, it } from "vitest";
import { boundedText, isJsonContentType, readDotPath } from "#lib/domain/predicates/dot-path.ts";
import {
  bindVariables,
  compileMatcher,
  compileMeterMatcher,
  compilePredicates,
  MAX_MATCHED_VALUE_LENGTH,
  MAX_PARSED_BODY_BYTES,
  MAX_PREDICATE_WORK_PER_REQUEST,
  MAX_VARIABLE_VALUE_LENGTH,
  type MeterApplicability,
  type PredicateRequest,
  PreparedPredicateRequest,
  predicatesOutcome,
  preparePredicateRequest,
} from "#lib/domain/predicates/evaluate.ts";
import { PredicateFields } from "#lib/domain/predicates/schema.ts";

function request(overrides: Partial<PredicateRequest> = {}): PredicateRequest {
  return { method: "GET", path: "/v1/items", headers: {}, query: {}, ...overrides };
}

const jsonRequest = (body: unknown, overrides: Partial<PredicateRequest> = {}): PredicateRequest =>
  request({
    method: "POST",
    body: Buffer.from(JSON.stringify(body)),
    contentType: "application/json",
    ...overrides,
  });

/** A meter whose predicate fields went through the shared input schema, as the API stores them. */
function meter(fields: Record<string, unknown>, mode: Partial<MeterApplicability> = {}): MeterApplicability {
  const parsed: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    const schema = PredicateFields[name as keyof typeof PredicateFields];
    parsed[name] = schema.parse(value);
  }
  return { meterMode: "conditional", effect: "include", ...parsed, ...mode };
}

const applies = (m: MeterApplicability, r: PredicateRequest) => compileMeterMatcher(m)(r);

describe("readDotPath", () => {
  const value = { items: [{ id: "a" }, { id: 7, tags: ["x"] }], "": 1, n: null, "0": "zero" };

  it("follows object keys and array indexes", () => {
    expect(readDotPath(value, "items.0.id")).toBe("a");
    expect(readDotPath(value, "items.1.id")).toBe(7);
    expect(readDotPath(value, "items.1.tags.0")).toBe("x");
    expect(readDotPath(value, ["items", "1", "tags"])).toEqual(["x"]);
    expect(readDotPath(value, "0")).toBe("zero");
    expect(readDotPath(value, "n")).toBeNull();
  });

  it("is undefined for anything that does not resolve", () => {
    expect(readDotPath(value, "items.2.id")).toBeUndefined();
    expect(readDotPath(value, "items.01")).toBeUndefined();
    expect(readDotPath(value, "items.-1")).toBeUndefined();
    expect(readDotPath(value, "items.length")).toBeUndefined();
    expect(readDotPath(value, "items.0.id.length")).toBeUndefined();
    expect(readDotPath(value, "n.x")).toBeUndefined();
    expect(readDotPath("text", "length")).toBeUndefined();
    expect(readDotPath(undefined, "a")).toBeUndefined();
  });

  it("never reaches the prototype", () => {
    expect(readDotPath({}, "__proto__")).toBeUndefined();
    expect(readDotPath({}, "constructor")).toBeUndefined();
    expect(readDotPath({}, "constructor.prototype")).toBeUndefined();
    expect(readDotPath({ a: {} }, "a.toString")).toBeUndefined();
    expect(readDotPath([], "constructor")).toBeUndefined();
    // A key the JSON itself has is data and resolves.
    const parsed = JSON.parse('{"__proto__":{"x":1},"constructor":"c"}');
    expect(readDotPath(parsed, "__proto__.x")).toBe(1);
    expect(readDotPath(parsed, "constructor")).toBe("c");
  });
});

describe("boundedText", () => {
  it("is a string as it is and anything else in its JSON form", () => {
    expect(boundedText("abc", 10)).toEqual({ text: "abc", complete: true });
    expect(boundedText(12, 10)).toEqual({ text: "12", complete: true });
    expect(boundedText(true, 10)).toEqual({ text: "true", complete: true });
    expect(boundedText(null, 10)).toEqual({ text: "null", complete: true });
    expect(boundedText({ a: [1, "x"] }, 100)).toEqual({ text: '{"a":[1,"x"]}', complete: true });
    expect(boundedText(undefined, 10)).toBeUndefined();
  });

  it("matches JSON.stringify on parsed JSON", () => {
    const value = JSON.parse('{"a":{"b":[1,2.5,-3e-7,"q\\"uote",null,true,{}],"c":"é😀"},"d":[]}');
    expect(boundedText(value, 10_000)).toEqual({ text: JSON.stringify(value), complete: true });
  });

  it("stops building at the limit and cuts to a true prefix", () => {
    const big = { list: Array.from({ length: 100_000 }, (_, i) => ({ i })) };
    const cut = boundedText(big, 50)!;
    expect(cut.complete).toBe(false);
    expect(cut.text).toBe(JSON.stringify(big).slice(0, 50));
    const longString = { s: "x".repeat(10_000) };
    expect(boundedText(longString, 20)).toEqual({
      text: JSON.stringify(longString).slice(0, 20),
      complete: false,
    });
    expect(boundedText("y".repeat(30), 20)).toEqual({ text: "y".repeat(20), complete: false });
  });

  it("does not end a cut text on half a surrogate pair", () => {
    const text = boundedText(`${"a".repeat(4)}😀b`, 5)!;
    expect(text).toEqual({ text: "aaaa", complete: false });
  });

  it("bounds the nesting it walks by the limit", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i += 1) deep = [deep];
    const text = boundedText(deep, 100)!;
    expect(text.complete).toBe(false);
    expect(text.text).toBe("[".repeat(100));
  });
});

describe("isJsonContentType", () => {
  it("accepts JSON media types and a missing content type", () => {
    expect(isJsonContentType(undefined)).toBe(true);
    expect(isJsonContentType("")).toBe(true);
    expect(isJsonContentType("application/json")).toBe(true);
    expect(isJsonContentType("Application/JSON; charset=utf-8")).toBe(true);
    expect(isJsonContentType("application/vnd.api+json")).toBe(true);
    expect(isJsonContentType("text/plain")).toBe(false);
    expect(isJsonContentType("application/x-www-form-urlencoded")).toBe(false);
    expect(isJsonContentType("application/jsonx")).toBe(false);
  });

  it("two Content-Type lines (joined with a comma): JSON when one of them is", () => {
    expect(isJsonContentType("text/plain,application/json")).toBe(true);
    expect(isJsonContentType("application/json, text/plain")).toBe(true);
    expect(isJsonContentType("text/plain, text/html")).toBe(false);
    // A meter on a body field cannot be dodged by adding a second Content-Type line.
    const m = meter({ body: [{ path: "model", pattern: "^gpt-5$" }] });
    expect(applies(m, jsonRequest({ model: "gpt-5" }, { contentType: "text/plain,application/json" }))).toBe(
      true,
    );
  });
});

describe("modes", () => {
  const post = meter({ methods: ["POST"] });

  it("all applies to every request, whatever the predicates", () => {
    const all = { ...post, meterMode: "all" as const };
    expect(applies(all, request({ method: "GET" }))).toBe(true);
    expect(applies(all, request({ method: "POST" }))).toBe(true);
    expect(applies({ meterMode: null }, request())).toBe(true);
    expect(compileMeterMatcher({ ...all, body: [{ path: "a", presence: "present" }] }).needsBody).toBe(false);
  });

  it("conditional include applies only when every predicate holds", () => {
    expect(applies(post, request({ method: "POST" }))).toBe(true);
    expect(applies(post, request({ method: "GET" }))).toBe(false);
  });

  it("conditional exclude applies to every request except those", () => {
    const exclude = { ...post, effect: "exclude" as const };
    expect(applies(exclude, request({ method: "POST" }))).toBe(false);
    expect(applies(exclude, request({ method: "GET" }))).toBe(true);
  });

  it("an empty conditional set holds for every request (include: all, exclude: none)", () => {
    expect(applies(meter({}), request())).toBe(true);
    expect(applies(meter({}, { effect: "exclude" }), request())).toBe(false);
    expect(compilePredicates({}).empty).toBe(true);
  });

  it("every predicate must hold: one failing predicate is enough", () => {
    const m = meter({ methods: ["POST"], path: { pattern: "^/v1/" }, headers: [{ name: "X-Tenant" }] });
    const ok = request({ method: "POST", headers: { "x-tenant": "t1" } });
    expect(applies(m, ok)).toBe(true);
    expect(applies(m, { ...ok, method: "PUT" })).toBe(false);
    expect(applies(m, { ...ok, path: "/v2/items" })).toBe(false);
    expect(applies(m, { ...ok, headers: {} })).toBe(false);
    expect(applies({ ...m, effect: "exclude" }, ok)).toBe(false);
    expect(applies({ ...m, effect: "exclude" }, { ...ok, headers: {} })).toBe(true);
  });

  it("a conditional set without effect is include", () => {
    expect(applies(meter({ methods: ["POST"] }, { effect: null }), request({ method: "GET" }))).toBe(false);
  });
});

describe("checks", () => {
  it("path: present must match, absent must not; a query string is ignored", () => {
    const present = meter({ path: { pattern: "^/v1/items$" } });
    expect(applies(present, request({ path: "/v1/items?x=1" }))).toBe(true);
    expect(applies(present, request({ path: "/v1/items/2" }))).toBe(false);
    const absent = meter({ path: { pattern: "admin", presence: "absent" } });
    expect(applies(absent, request({ path: "/v1/items" }))).toBe(true);
    expect(applies(absent, request({ path: "/admin" }))).toBe(false);
  });

  it("headers: names fold to lower case; a pattern must match one of the values", () => {
    const m = meter({ headers: [{ name: "X-Plan", pattern: "^(pro|team)$" }] });
    expect(applies(m, request({ headers: { "x-plan": "pro" } }))).toBe(true);
    expect(applies(m, request({ headers: { "X-Plan": "team" } }))).toBe(true);
    expect(applies(m, request({ headers: { "x-plan": ["free", "pro"] } }))).toBe(true);
    expect(applies(m, request({ headers: { "x-plan": "free" } }))).toBe(false);
    expect(applies(m, request())).toBe(false);
  });

  it("absent with a pattern: no value matches, or the field is missing", () => {
    const m = meter({ headers: [{ name: "x-plan", pattern: "free", presence: "absent" }] });
    expect(applies(m, request())).toBe(true);
    expect(applies(m, request({ headers: { "x-plan": "pro" } }))).toBe(true);
    expect(applies(m, request({ headers: { "x-plan": "free" } }))).toBe(false);
  });

  it("absent without a pattern: the field is missing", () => {
    const m = meter({ query: [{ name: "debug", presence: "absent" }] });
    expect(applies(m, request())).toBe(true);
    expect(applies(m, request({ query: { debug: "" } }))).toBe(false);
    expect(applies(m, request({ query: { debug: [] } }))).toBe(true);
  });

  it("query: names are case-sensitive, prototype names are not parameters", () => {
    const m = meter({ query: [{ name: "model", pattern: "^gpt-" }] });
    expect(applies(m, request({ query: { model: "gpt-4" } }))).toBe(true);
    expect(applies(m, request({ query: { Model: "gpt-4" } }))).toBe(false);
    const proto = meter({ query: [{ name: "constructor" }] });
    expect(applies(proto, request())).toBe(false);
  });

  it("body: a dot path into the JSON body; non-strings in their JSON form", () => {
    const m = meter({ body: [{ path: "model", pattern: "^gpt-4" }] });
    expect(applies(m, jsonRequest({ model: "gpt-4o" }))).toBe(true);
    expect(applies(m, jsonRequest({ model: "claude" }))).toBe(false);
    const n = meter({ body: [{ path: "options.n", pattern: "^[2-9]$" }] });
    expect(applies(n, jsonRequest({ options: { n: 3 } }))).toBe(true);
    expect(applies(n, jsonRequest({ options: { n: 1 } }))).toBe(false);
    const obj = meter({ body: [{ path: "messages.0", pattern: '"role":"system"' }] });
    expect(applies(obj, jsonRequest({ messages: [{ role: "system" }] }))).toBe(true);
  });

  it("body: not JSON, another content type, no body, JSON null: missing", () => {
    const present = meter({ body: [{ path: "a" }] });
    const absent = meter({ body: [{ path: "a", presence: "absent" }] });
    const cases: PredicateRequest[] = [
      request({ method: "POST", body: Buffer.from("a=1"), contentType: "application/x-www-form-urlencoded" }),
      request({ method: "POST", body: Buffer.from('{"a":1'), contentType: "application/json" }),
      request({ method: "POST", body: Buffer.from('{"a":1}'), contentType: "text/plain" }),
      request({ method: "POST" }),
      jsonRequest({ a: null }),
      jsonRequest([1, 2]),
    ];
    for (const r of cases) {
      expect(applies(present, r)).toBe(false);
      expect(applies(absent, r)).toBe(true);
    }
    // A JSON body without content type is read.
    expect(applies(present, request({ method: "POST", body: '{"a":"x"}' }))).toBe(true);
  });

  it("token: claims of a jwtVerify caller; another caller has none", () => {
    const m = meter({ token: [{ claim: "scope", pattern: "\\bwrite\\b" }] });
    expect(applies(m, request({ claims: { scope: "read write" } }))).toBe(true);
    expect(applies(m, request({ claims: { scope: "read" } }))).toBe(false);
    expect(applies(m, request())).toBe(false);
    const roles = meter({ token: [{ claim: "roles", pattern: '"admin"' }] });
    expect(applies(roles, request({ claims: { roles: ["user", "admin"] } }))).toBe(true);
    const proto = meter({ token: [{ claim: "constructor" }] });
    expect(applies(proto, request({ claims: {} }))).toBe(false);
  });
});

describe("several values (request-view.ts): the meter errs on applying", () => {
  const include = meter({ headers: [{ name: "x-role", pattern: "^admin$" }] });
  const exclude = meter({ headers: [{ name: "x-role", pattern: "^user$" }] }, { effect: "exclude" });
  const mixed: PredicateRequest[] = [
    request({ headers: { "x-role": ["user", "admin"] } }),
    request({ headers: { "x-role": ["admin", "user"] } }),
    request({ headers: { "x-role": "user,admin" } }),
    request({ headers: { "x-role": "admin, user" } }),
  ];

  it("include: any value (or comma-separated element) that matches makes the set hold", () => {
    for (const r of mixed) expect(applies(include, r), JSON.stringify(r.headers)).toBe(true);
    expect(applies(include, request({ headers: { "x-role": "user" } }))).toBe(false);
  });

  it("exclude: the set holds (the meter is left out) only when every value matches", () => {
    for (const r of mixed) expect(applies(exclude, r), JSON.stringify(r.headers)).toBe(true);
    expect(applies(exclude, request({ headers: { "x-role": "user" } }))).toBe(false);
    expect(applies(exclude, request({ headers: { "x-role": ["user", "user"] } }))).toBe(false);
    expect(applies(exclude, request({ headers: { "x-role": "user, user" } }))).toBe(false);
  });

  it("query: repeated values, first or last", () => {
    const m = meter({ query: [{ name: "role", pattern: "^admin$" }] });
    expect(applies(m, request({ query: { role: ["user", "admin"] } }))).toBe(true);
    expect(applies(m, request({ query: { role: ["admin", "user"] } }))).toBe(true);
    const out = meter({ query: [{ name: "role", pattern: "^user$" }] }, { effect: "exclude" });
    expect(applies(out, request({ query: { role: ["user", "admin"] } }))).toBe(true);
    expect(applies(out, request({ query: { role: ["user"] } }))).toBe(false);
  });

  it("body and claims: a JSON array is tested whole and element by element", () => {
    const m = meter({ body: [{ path: "roles", pattern: "^admin$" }] });
    expect(applies(m, jsonRequest({ roles: ["user", "admin"] }))).toBe(true);
    expect(applies(m, jsonRequest({ roles: ["admin", "user"] }))).toBe(true);
    expect(applies(m, jsonRequest({ roles: ["user"] }))).toBe(false);
    const whole = meter({ body: [{ path: "roles", pattern: '^\\["user"\\]$' }] });
    expect(applies(whole, jsonRequest({ roles: ["user"] }))).toBe(true);
    const out = meter({ body: [{ path: "roles", pattern: "^user$" }] }, { effect: "exclude" });
    expect(applies(out, jsonRequest({ roles: ["user", "admin"] }))).toBe(true);
    expect(applies(out, jsonRequest({ roles: ["admin", "user"] }))).toBe(true);
    expect(applies(out, jsonRequest({ roles: ["user", "user"] }))).toBe(false);
    const claim = meter({ token: [{ claim: "roles", pattern: "^admin$" }] });
    expect(applies(claim, request({ claims: { roles: ["user", "admin"] } }))).toBe(true);
    const numbers = meter({ body: [{ path: "n", pattern: "^3$" }] });
    expect(applies(numbers, jsonRequest({ n: [1, 3] }))).toBe(true);
  });

  it("predicatesOutcome: broad by default, narrow for an exclude set", () => {
    const compiled = compilePredicates({
      headers: [{ name: "x-role", pattern: "^user$", presence: "present" }],
    });
    const r = request({ headers: { "x-role": "user,admin" } });
    expect(predicatesOutcome(compiled, r)).toBe(true);
    expect(predicatesOutcome(compiled, r, false)).toBe(false);
  });
});

describe("undecided checks: the meter applies", () => {
  const long = "a".repeat(MAX_MATCHED_VALUE_LENGTH + 1);

  it("a value longer than the bound is not scanned and counts the request, in both effects", () => {
    const include = meter({ headers: [{ name: "x-a", pattern: "^b" }] });
    const exclude = { ...include, effect: "exclude" as const };
    const r = request({ headers: { "x-a": long } });
    expect(applies(include, r)).toBe(true);
    expect(applies(exclude, r)).toBe(true);
    const prepared = new PreparedPredicateRequest(r);
    compileMeterMatcher(include)(prepared);
    expect(prepared.stats.executions).toBe(0);
    // Presence alone is still decided.
    expect(applies(meter({ headers: [{ name: "x-a", presence: "absent" }] }), r)).toBe(false);
  });

  it("a failing predicate still decides, even beside an undecided one", () => {
    const m = meter({ methods: ["POST"], headers: [{ name: "x-a", pattern: "^b" }] });
    expect(applies(m, request({ method: "GET", headers: { "x-a": long } }))).toBe(false);
  });

  it("too many values, an over-long JSON value, an over-large body", () => {
    const values = Array.from({ length: 17 }, () => "v");
    expect(
      applies(meter({ headers: [{ name: "x-a", pattern: "^b" }] }), request({ headers: { "x-a": values } })),
    ).toBe(true);
    const body = meter({ body: [{ path: "a", pattern: "^never$" }] });
    expect(applies(body, jsonRequest({ a: { list: Array.from({ length: 2000 }, () => "xyz") } }))).toBe(true);
    const big = jsonRequest({ a: "x", pad: "p".repeat(MAX_PARSED_BODY_BYTES) });
    expect(applies(body, big)).toBe(true);
    expect(applies({ ...body, effect: "exclude" }, big)).toBe(true);
    expect(applies(meter({ body: [{ path: "a", presence: "absent" }] }), big)).toBe(true);
  });

  it("a stored pattern that no longer compiles leaves the set undecided", () => {
    const m = {
      meterMode: "conditional" as const,
      effect: "include" as const,
      path: { pattern: "(", presence: "present" as const },
    };
    expect(compilePredicates(m).invalid).not.toBeNull();
    expect(applies(m, request())).toBe(true);
    expect(applies({ ...m, effect: "exclude" }, request())).toBe(true);
    expect(applies({ ...m, methods: ["POST"] }, request({ method: "GET" }))).toBe(false);
  });

  it("the per-request work budget is shared by every matcher of the request", () => {
    const pattern = "[a-z]+[0-9]+[a-z]+[0-9]+";
    const value = "ab".repeat(2000);
    const headers: Record<string, string> = {};
    const checks = Array.from({ length: 20 }, (_, i) => {
      headers[`x-h${i}`] = value;
      return { name: `x-h${i}`, pattern, presence: "absent" };
    });
    const m = meter({ headers: checks });
    const prepared = preparePredicateRequest(request({ headers }));
    const matchers = [compileMeterMatcher(m), compileMeterMatcher({ ...m, effect: "exclude" })];
    const results = matchers.map((matcher) => matcher(prepared));
    expect(prepared.stats.overBudget).toBeGreaterThan(0);
    expect(prepared.stats.work).toBeLessThanOrEqual(MAX_PREDICATE_WORK_PER_REQUEST);
    // Both undecided: both apply.
    expect(results).toEqual([true, true]);
    // A transform-like matcher may settle undecided the other way.
    const transform = compileMatcher(m, { mode: "conditional", effect: "include", undecided: false });
    expect(transform(prepared)).toBe(false);
  });

  it("each (pattern, field) pair runs once per request", () => {
    const m = meter({ headers: [{ name: "x-a", pattern: "^b" }] });
    const prepared = preparePredicateRequest(request({ headers: { "x-a": "bcd" } }));
    compileMeterMatcher(m)(prepared);
    compileMeterMatcher({ ...m, effect: "exclude" })(prepared);
    expect(prepared.stats.executions).toBe(1);
  });
});

describe("lazy body", () => {
  it("the body is parsed only when a body check is reached", () => {
    const r = Object.defineProperty(request(), "body", {
      get(): Uint8Array {
        throw new Error("body read");
      },
    });
    expect(applies(meter({ methods: ["GET"] }), r)).toBe(true);
    // A failing method decides before the body is looked at.
    expect(applies(meter({ methods: ["POST"], body: [{ path: "a" }] }), r)).toBe(false);
    expect(() => applies(meter({ body: [{ path: "a" }] }), r)).toThrow("body read");
    expect(compileMeterMatcher(meter({ body: [{ path: "a" }] })).needsBody).toBe(true);
    expect(compileMeterMatcher(meter({ methods: ["GET"] })).needsBody).toBe(false);
  });

  it("parses a body once for every check and variable of the request", () => {
    let reads = 0;
    const source = jsonRequest({ a: "x", b: "y" });
    const r = Object.defineProperty({ ...source }, "body", {
      get() {
        reads += 1;
        return source.body;
      },
    });
    const prepared = preparePredicateRequest(r);
    const m = meter({ body: [{ path: "a" }, { path: "b", pattern: "y" }] });
    expect(predicatesOutcome(compilePredicates(m), prepared)).toBe(true);
    expect(bindVariables([{ name: "v", source: "body", key: "b" }], prepared)).toEqual(
      Object.assign(Object.create(null), { v: "y" }),
    );
    expect(reads).toBe(1);
  });
});

describe("bindVariables", () => {
  const r = {
    method: "POST",
    path: "/users/j%C3%B6rg/orders//7?x=1",
    headers: { "x-customer-id": ["c-1", "c-2"], "x-empty": "" },
    query: { region: "eu", multi: ["a", "b"] },
    body: Buffer.from(JSON.stringify({ user: { id: 42, tags: ["t"], n: null, long: "z".repeat(1000) } })),
    contentType: "application/json",
    claims: { sub: "user-1", org: { id: "o1" } },
  } satisfies PredicateRequest;

  const bind = (source: string, key: string) =>
    bindVariables([{ name: "v", source: source as "header", key }], r).v;

  it("binds each source", () => {
    expect(bind("header", "x-customer-id")).toBe("c-1");
    expect(bind("header", "X-Customer-Id")).toBe("c-1");
    expect(bind("query", "region")).toBe("eu");
    expect(bind("query", "multi")).toBe("a");
    expect(bind("path", "0")).toBe("users");
    expect(bind("path", "1")).toBe("jörg");
    expect(bind("path", "2")).toBe("orders");
    expect(bind("path", "4")).toBe("7");
    expect(bind("body", "user.id")).toBe("42");
    expect(bind("body", "user.tags")).toBe('["t"]');
    expect(bind("token", "sub")).toBe("user-1");
    expect(bind("token", "org")).toBe('{"id":"o1"}');
  });

  it("a missing, empty or null value binds undefined", () => {
    expect(bind("header", "x-missing")).toBeUndefined();
    expect(bind("header", "x-empty")).toBeUndefined();
    expect(bind("query", "missing")).toBeUndefined();
    expect(bind("path", "3")).toBeUndefined(); // the empty segment of "//"
    expect(bind("path", "9")).toBeUndefined();
    expect(bind("body", "user.n")).toBeUndefined();
    expect(bind("body", "user.constructor")).toBeUndefined();
    expect(bind("token", "toString")).toBeUndefined();
    expect(bindVariables([{ name: "v", source: "token", key: "sub" }], request()).v).toBeUndefined();
    expect(bindVariables([{ name: "v", source: "body", key: "a" }], request()).v).toBeUndefined();
  });

  it("values are cut to the bound", () => {
    expect(bind("body", "user.long")).toBe("z".repeat(MAX_VARIABLE_VALUE_LENGTH));
  });

  it("a malformed escape in the path is kept as sent", () => {
    expect(bindVariables([{ name: "v", source: "path", key: "0" }], request({ path: "/%E0%A4%A" })).v).toBe(
      "%E0%A4%A",
    );
  });

  it("any variable name is an own key of a prototype-less record", () => {
    const bound = bindVariables(
      [
        { name: "__proto__", source: "header", key: "x-customer-id" },
        { name: "constructor", source: "query", key: "region" },
      ],
      r,
    );
    expect(Object.getPrototypeOf(bound)).toBeNull();
    expect(Object.keys(bound)).toEqual(["__proto__", "constructor"]);
    expect(Object.getOwnPropertyDescriptor(bound, "__proto__")?.value).toBe("c-1");
    expect(bound.constructor).toBe("eu");
    expect(bindVariables(null, r)).toEqual(Object.create(null));
  });
});
