/**
 * Pieces shared by the proxy pages, the wizard and the rules section: a form built from an
 * operation's request schema (SchemaFields, client-side validation, the API's errors next to their
 * fields) and the pager of the API's `page`/`limit` lists.
 */
import { useMutation } from "@tanstack/react-query";
import { type ReactNode, useId, useState } from "react";
import { ApiError } from "../api/errors";
import {
  bodyOf,
  type FieldErrors,
  type FormValue,
  type JsonSchema,
  SchemaFields,
  type SchemaFieldsProps,
  validate,
} from "../schema-form";
import { FormError, Status } from "../ui";

/** The errors to show: the client-side ones, else the API's (by field). */
export const shownErrors = (client: FieldErrors, apiError: unknown): FieldErrors =>
  Object.keys(client).length > 0 ? client : apiError instanceof ApiError ? apiError.fields : {};

/**
 * A form of an operation's request body: the schema's fields (or those named), a value fixed by the
 * page merged in (`fixed`, never shown), validation before sending, the API's answer after.
 */
export function SchemaForm({
  title,
  headingLevel = 2,
  schema,
  initial = {},
  before,
  fixed = {},
  submitLabel,
  onSubmit,
  success,
  intro,
  className = "panel",
  prepare = (value) => value,
  ...fieldProps
}: Omit<SchemaFieldsProps, "value" | "onChange" | "errors"> & {
  title: string;
  headingLevel?: 2 | 3;
  initial?: FormValue;
  /** The stored value (a cleared nullable field is sent as null). */
  before?: FormValue;
  fixed?: FormValue;
  submitLabel: string;
  onSubmit: (body: FormValue, value: FormValue) => Promise<unknown>;
  success?: (result: unknown) => ReactNode;
  intro?: ReactNode;
  className?: string;
  /** The value as sent, from the value typed (a default the schema cannot say). */
  prepare?: (value: FormValue) => FormValue;
  schema: JsonSchema;
}) {
  const titleId = useId();
  const [value, setValue] = useState<FormValue>(initial);
  const [clientErrors, setClientErrors] = useState<FieldErrors>({});
  const submit = useMutation({
    mutationFn: ({ body, full }: { body: FormValue; full: FormValue }) => onSubmit(body, full),
  });
  const Heading = headingLevel === 2 ? "h2" : "h3";
  const errors = shownErrors(clientErrors, submit.error);
  // The API's field errors show next to the fields shown; the others (a fixed field) in the form's error.
  const shownFields = Object.keys(schema.properties ?? {}).filter(
    (name) =>
      !(name in fixed) &&
      !fieldProps.omit?.includes(name) &&
      (!fieldProps.fields || fieldProps.fields.includes(name)),
  );
  return (
    <form
      noValidate
      aria-labelledby={titleId}
      className={className}
      onSubmit={(event) => {
        event.preventDefault();
        const full = prepare({ ...value, ...fixed });
        const found = validate(schema, full);
        setClientErrors(found);
        if (Object.keys(found).length > 0) return;
        submit.mutate({ body: bodyOf(schema, full, before), full });
      }}
    >
      <Heading id={titleId}>{title}</Heading>
      {intro}
      <SchemaFields {...fieldProps} schema={schema} value={value} onChange={setValue} errors={errors} />
      {Object.keys(clientErrors).length > 0 && (
        <p role="alert" className="error">
          Error: some fields need a change (marked above).
        </p>
      )}
      <FormError error={submit.error} fields={shownFields} />
      {submit.error instanceof ApiError &&
        Object.entries(submit.error.fields)
          .filter(([name]) => !shownFields.includes(name))
          .map(([name, message]) => (
            <p key={name} className="field-error">
              Error: {name}: {message}
            </p>
          ))}
      {submit.isSuccess && success && <Status>{success(submit.data)}</Status>}
      <button type="submit" disabled={submit.isPending}>
        {submitLabel}
      </button>
    </form>
  );
}
