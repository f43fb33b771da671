/**
 * The value a `response_value` meter adds for one response (spec 2.9 `extraction`). Pure; see
 * docs/predicates.md ("Extraction").
 *
 * - location `body`: the value at the dot path `path` of the JSON response body (readDotPath: own
 *   properties and array indexes only); location `header`: the response header `headerName`
 *   (case-insensitive; its first value).
 * - A JSON number counts as it is; a string counts when it is a plain decimal number (`"12"`,
 *   `" 1.5 "`, `"2e3"`; not `""`, `"0x10"`, `"Infinity"`, `"12 tokens"`). Anything else, a
 *   non-finite number, a body that is not JSON or larger than MAX_EXTRACTION_BODY_BYTES, counts as
 *   absent: then `defaultValue`, else 0.
 * - A negative value (extracted or default) counts as 0: a response can never give quota back.
 */
import { parseJsonBody, readDotPath } from "#lib/domain/predicates/dot-path.ts";

/** Largest response body parsed for an extraction (bytes); a larger body counts as absent. */
export const MAX_EXTRACTION_BODY_BYTES = 8 * 1024 * 1024;

export interface Extraction {
  location: "body" | "header";
  path?: string | null;
  headerName?: string | null;
  defaultValue?: number | null;
}

export interface ExtractionResponse {
  /** Response headers (any case). */
  headers: Record<string, string | string[] | undefined>;
  body?: Uint8Array | string | null;
  contentType?: string | null;
}

/** A plain decimal number, optionally signed, with optional fraction and exponent. */
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** The number a value stands for, or undefined when it is not a finite number or a decimal string. */
export function numericValue(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  if (text.length > 64 || !DECIMAL.test(text)) return undefined;
  const number = Number(text);
  return Number.isFinite(number) ? number : undefined;
}

function headerValue(headers: ExtractionResponse["headers"], name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === "string") return first;
  }
  return undefined;
}

/** The value to add to the meter's windows for this response: at least 0, always finite. */
export function extractResponseValue(extraction: Extraction, response: ExtractionResponse): number {
  let found: number | undefined;
  if (extraction.location === "header" && extraction.headerName) {
    found = numericValue(headerValue(response.headers, extraction.headerName));
  } else if (extraction.location === "body" && extraction.path) {
    const contentType = response.contentType ?? headerValue(response.headers, "content-type");
    const body = parseJsonBody(response.body, contentType, MAX_EXTRACTION_BODY_BYTES);
    if (body.kind === "json") found = numericValue(readDotPath(body.value, extraction.path));
  }
  const value = found ?? numericValue(extraction.defaultValue) ?? 0;
  return Math.max(0, value);
}
