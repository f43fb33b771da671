/** Typed domain errors, their HTTP statuses at the edge, and the expose rule. */
import { describe, expect, it } from "vitest";
import { HttpError, httpErrorOf, methodNotAllowed, tooManyRequests } from "#lib/http/errors.ts";
import {
  badRequest,
  conflict,
  DomainError,
  forbidden,
  limitReached,
  notFound,
  serviceUnavailable,
  upstreamFailed,
  upstreamTimedOut,
  validationFailed,
} from "#lib/shared/errors.ts";

const http = (error: DomainError | HttpError) => (error instanceof DomainError ? httpErrorOf(error) : error);

describe("HttpError", () => {
  it.each([400, 401, 403, 404, 405, 409, 413, 429, 499])("exposes a %i message to the caller", (status) => {
    const error = new HttpError(status, "Told to the caller");
    expect(error.expose).toBe(true);
    expect(error.body).toEqual({ message: "Told to the caller" });
  });

  it.each([500, 502, 503, 504])("does not expose a %i", (status) => {
    expect(new HttpError(status, "internal detail").expose).toBe(false);
  });

  it("is an Error with a name, status, body and headers", () => {
    const error = new HttpError(418, "Teapot", { body: { extra: 1 }, headers: { "X-A": "b" } });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("HttpError");
    expect(error.message).toBe("Teapot");
    expect(error.status).toBe(418);
    expect(error.body).toEqual({ message: "Teapot", extra: 1 });
    expect(error.headers).toEqual({ "X-A": "b" });
    expect(new HttpError(400, "x").headers).toEqual({});
  });
});

describe("helpers", () => {
  it("have the right status and expose flag", () => {
    const cases: [DomainError | HttpError, number, boolean][] = [
      [badRequest("b"), 400, true],
      [forbidden(), 403, true],
      [notFound("n"), 404, true],
      [conflict("c"), 409, true],
      [limitReached("l", 3), 429, true],
      [methodNotAllowed("m", ["GET"]), 405, true],
      [tooManyRequests(5, 100), 429, true],
      // What the caller's own upstream said is shown; our own unavailability is not.
      [upstreamFailed("g"), 502, true],
      [upstreamTimedOut("t"), 504, true],
      [serviceUnavailable("s"), 503, false],
    ];
    for (const [error, status, expose] of cases) {
      expect([http(error).status, http(error).expose]).toEqual([status, expose]);
    }
    expect(forbidden().message).toBe("Forbidden");
    expect(forbidden().kind).toBe("forbidden");
    expect(http(badRequest("Bad", { detail: "x" })).body).toEqual({ message: "Bad", detail: "x" });
    expect(http(limitReached("Slow down", 7)).headers).toEqual({ "Retry-After": "7" });
  });

  it("tooManyRequests carries Retry-After and the rate-limit headers", () => {
    const error = tooManyRequests(17, 100);
    expect(error.headers).toEqual({
      "Retry-After": "17",
      "X-RateLimit-Limit": "100",
      "X-RateLimit-Remaining": "0",
    });
    expect(error.body).toEqual({ message: expect.stringMatching(/rate limit/i), retryAfter: 17 });
  });

  it("methodNotAllowed lists the allowed methods in Allow", () => {
    expect(methodNotAllowed("no", ["GET", "PUT"]).headers).toEqual({ Allow: "GET, PUT" });
  });

  it("validationFailed names each field once and lists every problem", () => {
    const error = validationFailed([
      { field: "a", problem: "is wrong" },
      { field: "b", problem: "is missing" },
      { field: "a", problem: "is too long" },
    ]);
    expect(error.kind).toBe("validation");
    expect(http(error).status).toBe(400);
    expect(http(error).body).toEqual({
      message: "Input failed data validation",
      fields: ["a", "b"],
      errors: ["a: is wrong", "b: is missing", "a: is too long"],
    });
  });
});
