/**
 * Dot paths into parsed JSON (`items.0.id`) and the bounded text form of a JSON value: one reader
 * for body predicates, body variables and the response extraction of meters (docs/predicates.md),
 * and the one JSON body parser they share. Pure; loads nothing (no pattern engine).
 */

/** A canonical array index: `0`, `7`, `12`; not `01`, `-1`, `1.0` or `length`. */
const INDEX = /^(0|[1-9][0-9]*)$/;

/**
 * The value at a dot path (a string such as `items.0.id`, or its segments), or undefined when a
 * segment does not resolve. Only own properties are followed: `__proto__`, `constructor` or
 * `toString` resolve only when the JSON itself has such a key, never to Object.prototype; an
 * array is followed only by a canonical index below its length (`length` is not a property here);
 * strings, numbers, booleans and null have no properties.
 */
export function readDotPath(value: unknown, path: string | readonly string[]): unknown {
  const segments = typeof path === "string" ? path.split(".") : path;
  let current: unknown = value;
  for (const segment of segments) {
    if (current === null || typeof current !== "object") return undefined;
    if (Array.isArray(current)) {
      if (!INDEX.test(segment)) return undefined;
      const index = Number(segment);
      if (index >= current.length) return undefined;
      current = current[index];
    } else {
      if (!Object.hasOwn(current, segment)) return undefined;
      current = (current as Record<string, unknown>)[segment];
    }
  }
  return current;
}

/** The text of a value, cut at `limit` characters; `complete` false when it was cut. */
export interface BoundedText {
  text: string;
  complete: boolean;
}

/**
 * The text form of a value taken from JSON or from claims: a string as it is, anything else in its
 * JSON form (`12`, `true`, `{"a":1}`), built only up to `limit` characters so that a large object
 * costs no more than the limit (and its nesting depth is bounded by it too). Cut texts end before a
 * lone surrogate half. undefined (and functions, which parsed JSON never holds) give undefined.
 */
export function boundedText(value: unknown, limit: number): BoundedText | undefined {
  if (value === undefined || typeof value === "function" || typeof value === "symbol") return undefined;
  if (typeof value === "string") return cut(value, limit);
  const parts: string[] = [];
  let length = 0;
  let complete = true;
  const push = (text: string): boolean => {
    parts.push(text);
    length += text.length;
    if (length > limit) complete = false;
    return complete;
  };
  const write = (item: unknown): boolean => {
    if (item === null || typeof item !== "object") {
      // Inside objects JSON.stringify drops undefined; inside arrays it writes null. Parsed JSON has neither.
      if (typeof item === "string") {
        // A string longer than the room left cannot fit: write only what is needed to go over.
        return push(JSON.stringify(item.length > limit ? item.slice(0, limit + 1) : item));
      }
      if (typeof item === "bigint") return push(item.toString());
      return push(JSON.stringify(item) ?? "null");
    }
    if (Array.isArray(item)) {
      if (!push("[")) return false;
      for (let i = 0; i < item.length; i += 1) {
        if (i > 0 && !push(",")) return false;
        if (!write(item[i])) return false;
      }
      return push("]");
    }
    if (!push("{")) return false;
    let first = true;
    for (const key of Object.keys(item)) {
      const child = (item as Record<string, unknown>)[key];
      if (child === undefined || typeof child === "function" || typeof child === "symbol") continue;
      if (!first && !push(",")) return false;
      first = false;
      if (!push(`${JSON.stringify(key.length > limit ? key.slice(0, limit + 1) : key)}:`)) return false;
      if (!write(child)) return false;
    }
    return push("}");
  };
  write(value);
  const text = parts.join("");
  return complete ? { text, complete } : cut(text, limit);
}

function cut(text: string, limit: number): BoundedText {
  if (text.length <= limit) return { text, complete: true };
  let end = limit;
  // Do not end on the high half of a surrogate pair.
  const last = text.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end -= 1;
  return { text: text.slice(0, end), complete: false };
}

/** The JSON body: parsed, not JSON (`missing`), or too large to parse (`undecided`). */
export type ParsedBody = { kind: "json"; value: unknown } | { kind: "missing" } | { kind: "undecided" };

/**
 * Whether a Content-Type allows reading the body as JSON: absent, application/json or *+json.
 * Several Content-Type lines arrive joined with commas and a target may read any of them: the body
 * is read as JSON when one of them is JSON (request-view.ts "several values").
 */
export function isJsonContentType(contentType: string | null | undefined): boolean {
  if (contentType === undefined || contentType === null || contentType.trim() === "") return true;
  return contentType.split(",").some((one) => {
    const media = (one.split(";")[0] ?? "").trim().toLowerCase();
    return media === "application/json" || /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]*\+json$/.test(media);
  });
}

/**
 * Parse a body as JSON: `missing` when it is empty, not JSON or of another content type,
 * `undecided` when it is larger than `maxBytes`.
 */
export function parseJsonBody(
  body: Uint8Array | string | null | undefined,
  contentType: string | null | undefined,
  maxBytes: number,
): ParsedBody {
  if (body === undefined || body === null || body.length === 0) return { kind: "missing" };
  if (!isJsonContentType(contentType)) return { kind: "missing" };
  const size = typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;
  if (size > maxBytes) return { kind: "undecided" };
  const text = typeof body === "string" ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  try {
    return { kind: "json", value: JSON.parse(text.toString()) };
  } catch {
    return { kind: "missing" };
  }
}
