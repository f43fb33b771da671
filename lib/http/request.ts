/** Helpers handlers share to read a request's parts. */
import type { z } from "zod";
import type { ApiRequest } from "./api-handler.ts";
import { decodePathParameter } from "./input-checks.ts";
import { DeleteBody, DeleteQuery } from "./schemas.ts";
import { parseInput } from "./validation.ts";

/** A path parameter, decoded (API Gateway passes it still percent-encoded); malformed ones are a 400 naming it. */
export function pathParam(request: ApiRequest, name: string): string {
  return decodePathParameter(name, request.params[name]);
}

export const bodyOf = <S extends z.ZodType>(request: ApiRequest, schema: S): z.infer<S> =>
  parseInput(schema, request.body ?? {});

/** `immediatelyDelete` from the JSON body or the query string; default false. */
export function immediatelyDelete(request: ApiRequest): boolean {
  const body = parseInput(DeleteBody, request.body);
  const query = parseInput(DeleteQuery, { immediatelyDelete: request.query.immediatelyDelete }, "query");
  return body?.immediatelyDelete ?? query.immediatelyDelete ?? false;
}
