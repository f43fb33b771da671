/** The state of an MSP page's SchemaFields form (value, client-side errors, the API's by field). */
import { useState } from "react";
import { ApiError } from "../api/errors";
import { type FieldErrors, type FormValue, type JsonSchema, validate } from "../schema";

/**
 * A SchemaFields form's state: its value, the errors of client-side validation and, after a failed
 * answer, the API's errors by field. `check()` validates against the schema (true when valid).
 */
export function useSchemaForm(schema: JsonSchema, initial: FormValue = {}) {
  const [value, setValue] = useState<FormValue>(initial);
  const [errors, setErrors] = useState<FieldErrors>({});
  return {
    value,
    setValue,
    errors,
    check(body: FormValue): boolean {
      const found = validate(schema, body);
      setErrors(found);
      return Object.keys(found).length === 0;
    },
    /**
     * Client-side errors, then the API's answer's by field (the API names a field's last segment:
     * `prefix` puts the fields of a nested object back under it, "rates" for "rates.apiSeconds").
     */
    all(apiError: unknown, prefix?: string): FieldErrors {
      const fromApi = apiError instanceof ApiError ? apiError.fields : {};
      const named = Object.fromEntries(
        Object.entries(fromApi).map(([field, message]) => [prefix ? `${prefix}.${field}` : field, message]),
      );
      return { ...named, ...errors };
    },
  };
}
