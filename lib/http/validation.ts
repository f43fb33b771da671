import { z } from "zod";
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

/** A trimmed, non-empty, bounded string. */
export const text = (max: number) =>
  z.string().trim().min(1, "must not be empty").max(max, `at most ${max} characters`);

/** Query-string boolean: accepts true/false (any case). */
export const queryBoolean = z
  .enum(["true", "false", "TRUE", "FALSE", "True", "False"])
  .transform((value) => value.toLowerCase() === "true");
