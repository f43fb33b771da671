/** The error a function throws, as the HTTP edge answers it (asserted on outside any catch). */
import { expect } from "vitest";
import { HttpError, httpErrorOf } from "#lib/http/errors.ts";
import { DomainError } from "#lib/shared/errors.ts";

export function errorOf(fn: () => unknown): HttpError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  if (caught instanceof DomainError) return httpErrorOf(caught);
  expect(caught).toBeInstanceOf(HttpError);
  return caught as HttpError;
}
