/**
 * Input parsed with a zod schema, in the domain's terms: a failure is the spec's 400 naming every
 * failing field (validationFailed, lib/shared/errors.ts). The HTTP edge re-exports it
 * (lib/http/validation.ts); domain modules that parse (rule-schema.ts) import it from here.
 */
import type { z } from "zod";
import { validationFailed } from "./errors.ts";

/** Parse input with a zod schema; on failure throw the spec's 400 naming every failing field. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, root = "body"): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw validationFailed(
    result.error.issues.flatMap((issue) => {
      if (issue.code === "unrecognized_keys") {
        return issue.keys.map((k) => ({
          field: [...issue.path, k].join(".") || root,
          problem: "is not a field that can be set here",
        }));
      }
      // A record key that fails its schema (a header name, say): show why, not "Invalid key".
      if (issue.code === "invalid_key") {
        return [
          { field: issue.path.join(".") || root, problem: issue.issues[0]?.message ?? "is not a valid name" },
        ];
      }
      return [{ field: issue.path.join(".") || root, problem: issue.message }];
    }),
  );
}
