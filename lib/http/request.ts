/** Helpers handlers share to read a request's parts. */
import type { z } from "zod";
import type { ApiRequest } from "./api-handler.ts";
import { badRequest } from "./errors.ts";
import { DeleteBody, DeleteQuery } from "./schemas.ts";
import { parseInput } from "./validation.ts";

export function pathParam(request: ApiRequest, name: string): string {
  const value = request.params[name];
  if (!value) throw badRequest(`Missing path parameter ${name}`);
  return decodeURIComponent(value);
}

export const bodyOf = <S extends z.ZodType>(request: ApiRequest, schema: S): z.infer<S> =>
  parseInput(schema, request.body ?? {});

/** `immediatelyDelete` from the JSON body or the query string; default false. */
export function immediatelyDelete(request: ApiRequest): boolean {
  const body = parseInput(DeleteBody, request.body);
  const query = parseInput(DeleteQuery, { immediatelyDelete: request.query.immediatelyDelete }, "query");
  return body?.immediatelyDelete ?? query.immediatelyDelete ?? false;
}
