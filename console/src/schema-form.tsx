/**
 * Forms built from the API's own schemas: the request-body schemas of the registry's OpenAPI
 * document (generated into api/request-schemas.ts by console/scripts/api-types.ts) render as
 * labelled fields, and the same schemas validate the value before it is sent. A page names the
 * operation and, where it wants, the fields to show and their labels; it never lists a field's type,
 * limits or choices itself.
 *
 * Supported shapes: strings (text, long text, enum → select), integers and numbers, booleans,
 * nullable values (`anyOf [X, null]`), nested objects (a fieldset), maps of strings (name/value
 * rows), arrays of enum values (checkboxes), of strings (one per line) and of objects (repeated
 * fieldsets), free JSON (`{}`: a JSON text area), and `oneOf` objects told apart by one property with
 * a constant value (a select of that property, then the chosen branch's fields).
 */
import { type ReactNode, useId } from "react";
import { useDeploymentRegions } from "./regions";
import {
  branchOf,
  constantOf,
  discriminatorOf,
  type FieldErrors,
  type FormValue,
  humanise,
  type JsonSchema,
  typeOf,
  unwrapNullable,
} from "./schema";

export * from "./schema";

export interface SchemaFieldsProps {
  schema: JsonSchema;
  value: FormValue;
  onChange: (value: FormValue) => void;
  /** Errors by field path (client-side validation, or the API's, which name the field's last segment). */
  errors?: FieldErrors;
  /** The fields to show, in this order (default: all of the schema's, in its order). */
  fields?: string[];
  /** Fields left out. */
  omit?: string[];
  /** Labels by field path, where the schema's title or the field's name in words is not right. */
  labels?: Record<string, string>;
  /** Hints by field path (default: the schema's description). */
  hints?: Record<string, ReactNode>;
  /** Options for string fields whose choices come from elsewhere (ids of existing resources). */
  choices?: Record<string, Array<{ value: string; label: string }>>;
  /** The path of this object inside the form ("" at the top). */
  path?: string;
  disabled?: boolean;
}

/** The fields of an object schema, each labelled, with its hint and its error. */
export function SchemaFields(props: SchemaFieldsProps) {
  const { value, onChange, path = "" } = props;
  const discriminator = discriminatorOf(props.schema);
  const schema = props.schema.oneOf ? branchOf(props.schema, value) : props.schema;
  const names = (props.fields ?? Object.keys(schema.properties ?? {})).filter(
    (name) => schema.properties?.[name] && !props.omit?.includes(name),
  );
  if (discriminator && !props.omit?.includes(discriminator)) {
    const at = names.indexOf(discriminator);
    if (at > 0) names.splice(at, 1);
    if (at !== 0) names.unshift(discriminator);
  }
  return (
    <>
      {names.map((name) => {
        const fullPath = path ? `${path}.${name}` : name;
        const field =
          name === discriminator
            ? {
                type: "string",
                ...schema.properties?.[name],
                const: undefined,
                enum: (props.schema.oneOf ?? []).map((branch) => constantOf(branch, name)),
              }
            : (schema.properties?.[name] as JsonSchema);
        return (
          <SchemaField
            key={fullPath}
            {...props}
            path={fullPath}
            name={name}
            field={field}
            required={schema.required?.includes(name) ?? false}
            item={value[name]}
            onItem={(item) => {
              const next = { ...value, [name]: item };
              if (item === undefined) delete next[name];
              onChange(next);
            }}
          />
        );
      })}
    </>
  );
}

const errorFor = (errors: FieldErrors | undefined, path: string): string | undefined =>
  errors?.[path] ?? (path.includes(".") ? undefined : errors?.[path.split(".").at(-1) ?? path]);

function SchemaField({
  name,
  path,
  field,
  required,
  item,
  onItem,
  errors,
  labels,
  hints,
  choices,
  disabled,
}: SchemaFieldsProps & {
  name: string;
  path: string;
  field: JsonSchema;
  required: boolean;
  item: unknown;
  onItem: (item: unknown) => void;
}) {
  const id = useId();
  const unwrapped = unwrapNullable(field);
  const nullable = unwrapped.nullable;
  // A region field (the generated schemas leave regions as text): the deployment's regions as its
  // choices, once known (regions.ts).
  const regionText = typeOf(unwrapped.schema) === "string" && !unwrapped.schema.enum && /region$/i.test(name);
  const regionItems =
    typeOf(unwrapped.schema) === "array" &&
    /region/i.test(name) &&
    typeOf(unwrapNullable(unwrapped.schema.items ?? {}).schema) === "string" &&
    !unwrapNullable(unwrapped.schema.items ?? {}).schema.enum;
  const { regions, loading: regionsLoading } = useDeploymentRegions(
    (regionText || regionItems) && !choices?.[path],
  );
  const schema: JsonSchema =
    regions && regionText
      ? { ...unwrapped.schema, enum: regions }
      : regions && regionItems
        ? { ...unwrapped.schema, items: { type: "string", enum: regions } }
        : unwrapped.schema;
  const label = labels?.[path] ?? schema.title ?? field.title ?? humanise(name);
  const hint = hints?.[path] ?? field.description ?? schema.description;
  const error = errorFor(errors, path);
  const type = typeOf(schema);
  const describedBy =
    [hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined;
  const common = {
    id,
    name: path,
    disabled,
    "aria-invalid": error ? true : undefined,
    "aria-describedby": describedBy,
  } as const;
  const labelText = `${label}${required ? "" : " (optional)"}`;
  // A secret (write-only, or a credential secret's key, token, password or secret) is typed into a
  // password field, so it is not on screen while typed.
  const secret =
    field.writeOnly === true ||
    schema.writeOnly === true ||
    (/^secret\./.test(path) && /(secret|password|token|key|keyValue)$/i.test(name));
  const hintAndError = (
    <>
      {hint && (
        <p id={`${id}-hint`} className="hint">
          {hint}
        </p>
      )}
      {error && (
        <p id={`${id}-error`} className="field-error">
          Error: {error}
        </p>
      )}
    </>
  );

  if (regionsLoading && regionText)
    // A select from the start (its choices arrive in a moment), so the field does not change kind.
    return (
      <div className="field">
        <label htmlFor={id}>{labelText}</label>
        {hintAndError}
        <select {...common} disabled value="">
          <option value="">Loading regions…</option>
        </select>
      </div>
    );
  const choiceList = choices?.[path];
  // Choices of an array of enum values label its checkboxes (below); of a string, they make a select.
  if ((choiceList && type !== "array") || schema.enum) {
    const options =
      choiceList ?? (schema.enum ?? []).map((option) => ({ value: String(option), label: String(option) }));
    return (
      <div className="field">
        <label htmlFor={id}>{labelText}</label>
        {hintAndError}
        <select
          {...common}
          value={item === undefined || item === null ? "" : String(item)}
          onChange={(event) =>
            onItem(event.target.value === "" ? (nullable ? null : undefined) : event.target.value)
          }
        >
          {(!required || item === undefined) && <option value="">{required ? "Choose…" : "None"}</option>}
          {options.map((option) => (
            <option key={option.value} value={option.value}>
              {option.label}
            </option>
          ))}
        </select>
      </div>
    );
  }
  if (type === "boolean")
    return (
      <div className="field checkbox">
        <input
          {...common}
          type="checkbox"
          checked={item === true || (item === undefined && schema.default === true)}
          onChange={(event) => onItem(event.target.checked)}
        />
        <label htmlFor={id}>{label}</label>
        {hintAndError}
      </div>
    );
  if (type === "integer" || type === "number")
    return (
      <div className="field">
        <label htmlFor={id}>{labelText}</label>
        {hintAndError}
        <input
          {...common}
          type="number"
          inputMode={type === "integer" ? "numeric" : "decimal"}
          step={type === "integer" ? 1 : "any"}
          min={schema.minimum}
          max={schema.maximum}
          value={typeof item === "number" ? item : ""}
          onChange={(event) => onItem(event.target.value === "" ? undefined : Number(event.target.value))}
        />
      </div>
    );
  if (type === "array" && schema.items) {
    const items = Array.isArray(item) ? item : [];
    const itemSchema = unwrapNullable(schema.items).schema;
    if (itemSchema.enum)
      return (
        <fieldset aria-describedby={describedBy}>
          <legend>{labelText}</legend>
          {hintAndError}
          {itemSchema.enum.map((option) => (
            <label key={String(option)} className="checkbox">
              <input
                type="checkbox"
                disabled={disabled}
                checked={items.includes(option)}
                onChange={(event) =>
                  onItem(
                    event.target.checked ? [...items, option] : items.filter((other) => other !== option),
                  )
                }
              />{" "}
              {choiceList?.find((choice) => choice.value === String(option))?.label ?? String(option)}
            </label>
          ))}
        </fieldset>
      );
    if (typeOf(itemSchema) === "object" && itemSchema.properties)
      return (
        <fieldset aria-describedby={describedBy}>
          <legend>{labelText}</legend>
          {hintAndError}
          {items.map((entry, index) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity of their own
            <fieldset key={index}>
              <legend>
                {label} {index + 1}
              </legend>
              <SchemaFields
                schema={itemSchema}
                value={(entry ?? {}) as FormValue}
                onChange={(next) => onItem(items.map((other, at) => (at === index ? next : other)))}
                errors={errors}
                labels={labels}
                path={`${path}.${index}`}
                disabled={disabled}
              />
              <button
                type="button"
                disabled={disabled}
                onClick={() => onItem(items.filter((_, at) => at !== index))}
              >
                Remove {label.toLowerCase()} {index + 1}
              </button>
            </fieldset>
          ))}
          {(schema.maxItems === undefined || items.length < schema.maxItems) && (
            <button type="button" disabled={disabled} onClick={() => onItem([...items, {}])}>
              Add {label.toLowerCase()}
            </button>
          )}
        </fieldset>
      );
    return (
      <div className="field">
        <label htmlFor={id}>{labelText}</label>
        <p className="hint">One per line.</p>
        {hintAndError}
        <textarea
          {...common}
          rows={3}
          value={items.join("\n")}
          onChange={(event) => {
            const lines = event.target.value.split("\n");
            onItem(event.target.value === "" ? [] : lines);
          }}
          onBlur={(event) =>
            onItem(
              event.target.value
                .split("\n")
                .map((line) => line.trim())
                .filter(Boolean),
            )
          }
        />
      </div>
    );
  }
  if (type === "object" && schema.properties)
    return (
      <fieldset aria-describedby={describedBy}>
        <legend>{labelText}</legend>
        {hintAndError}
        <SchemaFields
          schema={schema}
          value={(item ?? {}) as FormValue}
          onChange={onItem}
          errors={errors}
          labels={labels}
          hints={hints}
          choices={choices}
          path={path}
          disabled={disabled}
        />
      </fieldset>
    );
  if (
    type === "object" &&
    typeof schema.additionalProperties === "object" &&
    typeOf(schema.additionalProperties) === "string"
  )
    return (
      <KeyValueRows
        label={labelText}
        hintAndError={hintAndError}
        describedBy={describedBy}
        value={(item ?? {}) as Record<string, string>}
        onChange={(next) => onItem(Object.keys(next).length ? next : undefined)}
        disabled={disabled}
      />
    );
  // A map of free values (`additionalProperties: {}`): name/value rows, a value read as JSON when it is.
  if (
    type === "object" &&
    !schema.properties &&
    typeof schema.additionalProperties === "object" &&
    Object.keys(schema.additionalProperties).length === 0
  )
    return (
      <KeyValueRows
        label={labelText}
        hintAndError={hintAndError}
        describedBy={describedBy}
        value={Object.fromEntries(
          Object.entries((item ?? {}) as Record<string, unknown>).map(([key, entry]) => [
            key,
            typeof entry === "string" ? entry : JSON.stringify(entry),
          ]),
        )}
        onChange={(next) =>
          onItem(
            Object.keys(next).length
              ? Object.fromEntries(Object.entries(next).map(([key, entry]) => [key, jsonOrText(entry)]))
              : undefined,
          )
        }
        disabled={disabled}
      />
    );
  if (type === "string")
    return (
      <div className="field">
        <label htmlFor={id}>{labelText}</label>
        {hintAndError}
        {!secret &&
        (schema.maxLength ?? 0) > 300 &&
        schema.format !== "uri" &&
        !/url|uri|path|host/i.test(name) ? (
          <textarea
            {...common}
            rows={4}
            value={typeof item === "string" ? item : ""}
            onChange={(event) => onItem(event.target.value)}
          />
        ) : (
          <input
            {...common}
            type={
              secret
                ? "password"
                : schema.format === "email"
                  ? "email"
                  : schema.format === "uri"
                    ? "url"
                    : "text"
            }
            autoComplete={secret ? "new-password" : "off"}
            value={typeof item === "string" ? item : ""}
            onChange={(event) => onItem(event.target.value)}
          />
        )}
      </div>
    );
  // Anything else (free JSON): a JSON text, kept as text until it parses.
  return (
    <div className="field">
      <label htmlFor={id}>{labelText}</label>
      <p className="hint">JSON.</p>
      {hintAndError}
      <textarea
        {...common}
        rows={4}
        className="code"
        defaultValue={item === undefined ? "" : JSON.stringify(item, null, 2)}
        onChange={(event) => {
          const text = event.target.value.trim();
          if (text === "") return onItem(undefined);
          try {
            onItem(JSON.parse(text));
          } catch {
            onItem(text);
          }
        }}
      />
    </div>
  );
}

/** A map of names to text values: one row per entry, with Add and Remove. */
function KeyValueRows({
  label,
  hintAndError,
  describedBy,
  value,
  onChange,
  disabled,
}: {
  label: string;
  hintAndError: ReactNode;
  describedBy?: string;
  value: Record<string, string>;
  onChange: (value: Record<string, string>) => void;
  disabled?: boolean;
}) {
  const entries = Object.entries(value);
  const rename = (index: number, name: string) =>
    onChange(
      Object.fromEntries(entries.map(([key, item], at) => (at === index ? [name, item] : [key, item]))),
    );
  return (
    <fieldset aria-describedby={describedBy}>
      <legend>{label}</legend>
      {hintAndError}
      {entries.map(([key, item], index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a row keeps its place while its name is edited
        <div className="row" key={index}>
          <label>
            Name {index + 1}{" "}
            <input disabled={disabled} value={key} onChange={(event) => rename(index, event.target.value)} />
          </label>
          <label>
            Value {index + 1}{" "}
            <input
              disabled={disabled}
              value={item}
              onChange={(event) => onChange({ ...value, [key]: event.target.value })}
            />
          </label>
          <button
            type="button"
            disabled={disabled}
            onClick={() => onChange(Object.fromEntries(entries.filter((_, at) => at !== index)))}
          >
            Remove {key || `row ${index + 1}`}
          </button>
        </div>
      ))}
      <button type="button" disabled={disabled || "" in value} onClick={() => onChange({ ...value, "": "" })}>
        Add a row to {label.replace(/ \(optional\)$/, "").toLowerCase()}
      </button>
    </fieldset>
  );
}

/** A typed value read as JSON when it is JSON other than a string (1, true, {"a": 1}), else the text. */
function jsonOrText(text: string): unknown {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "string" ? text : parsed;
  } catch {
    return text;
  }
}
