/** The canonical configuration of a transform (lib/domain/transforms/schema.ts). */
import { describe, expect, it } from "vitest";
import {
  mergeTransformUpdate,
  normaliseTransform,
  transformConfigOf,
} from "#lib/domain/transforms/schema.ts";

const REQUEST_DEFAULTS = {
  effect: null,
  priority: 0,
  methods: [],
  path: null,
  query: [],
  headers: [],
  body: [],
  token: [],
  variables: [],
  notes: "",
};
const RESPONSE_FIELDS = { responseHeaders: [], responseBody: [], responseStatus: [] };

describe("normaliseTransform", () => {
  it("fills a request transform's defaults, without the response predicates", () => {
    expect(normaliseTransform("request", { transformMode: "all", transformActive: true })).toEqual({
      transformMode: "all",
      transformActive: true,
      ...REQUEST_DEFAULTS,
    });
  });

  it("gives a response transform the response predicates too, and keeps what the body sets", () => {
    expect(
      normaliseTransform("response", {
        transformMode: "all",
        transformActive: false,
        priority: 5,
        code: "x",
      }),
    ).toEqual({
      transformMode: "all",
      transformActive: false,
      ...REQUEST_DEFAULTS,
      ...RESPONSE_FIELDS,
      priority: 5,
    });
  });

  it("hands out fresh defaults: changing one configuration never changes the next", () => {
    const first = normaliseTransform("request", { transformMode: "all", transformActive: true });
    first.methods.push("GET");
    expect(normaliseTransform("request", { transformMode: "all", transformActive: true }).methods).toEqual(
      [],
    );
  });
});

describe("mergeTransformUpdate", () => {
  it("replaces given fields, clears null ones to their default, keeps the rest, ignores code", () => {
    const current = normaliseTransform("request", {
      transformMode: "conditional",
      effect: "include",
      transformActive: true,
      methods: ["POST"],
      notes: "n",
    });
    expect(
      mergeTransformUpdate(current, { methods: null, priority: 2, code: "new", notes: undefined }),
    ).toEqual({
      ...current,
      methods: [],
      priority: 2,
    });
  });
});

describe("transformConfigOf", () => {
  it("keeps a stored transform's configuration fields and nothing else", () => {
    const config = normaliseTransform("response", {
      transformMode: "all",
      transformActive: true,
      priority: 3,
    });
    const stored = {
      ...config,
      pKey: "CLIENT#c",
      transformId: "t",
      codeVersion: 2,
      codeGzip: true,
      code: "x",
    };
    expect(transformConfigOf("response", stored)).toEqual(config);
  });

  it("reads a response transform stored without its response predicates as empty ones", () => {
    const {
      responseHeaders: _h,
      responseBody: _b,
      responseStatus: _s,
      ...older
    } = normaliseTransform("response", {
      transformMode: "all",
      transformActive: true,
    });
    expect(transformConfigOf("response", older)).toEqual({
      transformMode: "all",
      transformActive: true,
      ...REQUEST_DEFAULTS,
      ...RESPONSE_FIELDS,
    });
  });

  it("gives a request transform no response predicates", () => {
    const config = normaliseTransform("request", { transformMode: "all", transformActive: true });
    expect(Object.keys(transformConfigOf("request", { ...config, ...RESPONSE_FIELDS }))).not.toContain(
      "responseHeaders",
    );
  });
});
