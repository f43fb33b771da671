/** Generic pagination (spec 8): page default 1, limit default 20, maximum 100. */
import { describe, expect, it } from "vitest";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, paginate, parsePageRequest } from "#lib/db/pagination.ts";
import { VALIDATION_MESSAGE } from "#lib/http/errors.ts";
import { errorOf } from "../support/errors.ts";

describe("parsePageRequest", () => {
  it("defaults to page 1 and limit 20", () => {
    expect(DEFAULT_PAGE_SIZE).toBe(20);
    expect(parsePageRequest({})).toEqual({ page: 1, limit: 20 });
    expect(parsePageRequest({ page: undefined, limit: undefined })).toEqual({ page: 1, limit: 20 });
  });

  it("reads query strings as numbers", () => {
    expect(parsePageRequest({ page: "3", limit: "50" })).toEqual({ page: 3, limit: 50 });
  });

  it("accepts the maximum limit of 100", () => {
    expect(MAX_PAGE_SIZE).toBe(100);
    expect(parsePageRequest({ limit: "100" })).toEqual({ page: 1, limit: 100 });
  });

  it("rejects a limit above 100 with the spec's 400 naming limit", () => {
    const error = errorOf(() => parsePageRequest({ limit: "101" }));
    expect(error.status).toBe(400);
    expect(error.message).toBe(VALIDATION_MESSAGE);
    expect(error.body.fields).toEqual(["limit"]);
  });

  it.each([["0"], ["-1"], ["abc"], ["1.5"]])("rejects page %j with a 400 naming page", (page) => {
    const error = errorOf(() => parsePageRequest({ page }));
    expect(error.status).toBe(400);
    expect(error.body.fields).toEqual(["page"]);
  });

  it.each([["0"], ["abc"]])("rejects limit %j with a 400 naming limit", (limit) => {
    const error = errorOf(() => parsePageRequest({ limit }));
    expect(error.status).toBe(400);
    expect(error.body.fields).toEqual(["limit"]);
  });

  it("names both fields when both are wrong", () => {
    const error = errorOf(() => parsePageRequest({ page: "0", limit: "1000" }));
    expect(error.body.fields).toEqual(["page", "limit"]);
  });
});

describe("paginate", () => {
  const items = Array.from({ length: 45 }, (_, i) => i + 1);

  it("returns the requested slice and the totals", () => {
    expect(paginate(items, { page: 1, limit: 20 })).toEqual({
      items: items.slice(0, 20),
      pagination: { page: 1, limit: 20, total: 45, pages: 3 },
    });
    expect(paginate(items, { page: 3, limit: 20 })).toEqual({
      items: [41, 42, 43, 44, 45],
      pagination: { page: 3, limit: 20, total: 45, pages: 3 },
    });
  });

  it("returns an empty page past the end, still with the totals", () => {
    expect(paginate(items, { page: 4, limit: 20 })).toEqual({
      items: [],
      pagination: { page: 4, limit: 20, total: 45, pages: 3 },
    });
  });

  it("counts pages exactly at a boundary", () => {
    expect(paginate(items.slice(0, 40), { page: 2, limit: 20 }).pagination.pages).toBe(2);
    expect(paginate(items.slice(0, 41), { page: 2, limit: 20 }).pagination.pages).toBe(3);
    expect(paginate([1], { page: 1, limit: 100 }).pagination).toEqual({
      page: 1,
      limit: 100,
      total: 1,
      pages: 1,
    });
  });

  it("has zero pages when there is nothing", () => {
    expect(paginate([], { page: 1, limit: 20 })).toEqual({
      items: [],
      pagination: { page: 1, limit: 20, total: 0, pages: 0 },
    });
  });

  it("does not modify its input", () => {
    const copy = [...items];
    paginate(items, { page: 2, limit: 10 });
    expect(items).toEqual(copy);
  });
});
