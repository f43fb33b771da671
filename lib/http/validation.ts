import { z } from "zod";

/** The domain's parse (lib/shared/parse-input.ts), the one declaration of the 400 naming the failing fields. */
export { parseInput } from "#lib/shared/parse-input.ts";

/** A trimmed, non-empty, bounded string. */
export const text = (max: number) =>
  z.string().trim().min(1, "must not be empty").max(max, `at most ${max} characters`);

/** Query-string boolean: accepts true/false (any case); documented as a boolean (its text is `true` or `false`). */
export const queryBoolean = z
  .enum(["true", "false", "TRUE", "FALSE", "True", "False"])
  .transform((value) => value.toLowerCase() === "true")
  .meta({ type: "boolean", enum: [true, false] });
