/**
 * Redaction of secret VALUES (issue 7): the one function that every place which stores or returns
 * what a target answered (request log, credential test, token test, and later MCP tool results)
 * passes its text through. A target that echoes its request (httpbin and the like) puts the
 * credential the gateway sent into its answer; name-based redaction (the `Authorization` header,
 * `api_key` parameters) cannot catch that, so the plaintext of every secret used by the request
 * is searched for, in every form an echo is likely to show, and replaced by the marker.
 *
 * What counts as a secret (`secretValues`): every string value of the decrypted secret, walked
 * generically (additional headers / query parameters, custom data, token request fields, tokens,
 * passwords, client secrets...), except the fields that only configure how the secret is used
 * (NON_SECRET_FIELDS: names, placements, prefixes, URLs, flows, claims...). New fields are secret
 * unless listed. Plus the tokens the gateway fetched for the request (customToken, OAuth2).
 *
 * The forms searched for (`secretForms`), each secret of at least MIN_SECRET_LENGTH characters:
 * - the plaintext (UTF-8; and Latin-1 bytes, as Node sends a header with such characters);
 * - percent-encoded (encodeURIComponent, form encoding with `+`, lower-case hex too);
 * - JSON-escaped (standard, with `\/`, and with `\uXXXX` for non-ASCII as Python's json does);
 * - base64 and base64url of each form above, whole, and the three "aligned cores": the characters
 *   fully determined by the form's bytes whatever precedes or follows it, so the secret is found
 *   inside any base64 text that contains it (a `Basic` header's `user:password`, an encoded JSON
 *   document or URL...); and the percent-encoded base64;
 * - `username:password` and its base64 (`Basic`) for basicAuth.
 *
 * Matching is one Aho-Corasick pass over the bytes (linear in the text, whatever the number of
 * patterns); every byte covered by any match is replaced, overlapping matches become one marker.
 * Automatons are cached by their secrets, so a warm function builds one per credential and token.
 * If the forms exceed MAX_PATTERN_BYTES the redactor fails closed: every non-empty text becomes
 * the marker. docs/request-logs.md describes it for users.
 */
import { createHash } from "node:crypto";

/** The marker that replaces a secret (and the value of a sensitive header or query parameter). */
export const REDACTED = "[redacted]";
/**
 * Secrets shorter than this (in characters) are not searched for: a 1-3 character value (a PIN,
 * `on`, `yes`) would redact ordinary text everywhere. The schemas already require more for real
 * credentials (tokens, keys and passwords are long); a short value in custom data is configuration.
 */
export const MIN_SECRET_LENGTH = 4;
/** Upper bound of the pattern bytes of one redactor; beyond it the redactor withholds everything. */
export const MAX_PATTERN_BYTES = 2 * 1024 * 1024;
/** Automatons kept (LRU), and the pattern bytes they may hold together. */
const CACHE_MAX_ENTRIES = 256;
const CACHE_MAX_PATTERN_BYTES = 8 * 1024 * 1024;
/** Nested values deeper than this (in `value`) are replaced whole by the marker. */
const MAX_VALUE_DEPTH = 64;

/**
 * Fields of a secret that configure how it is used and are not secret themselves. Their values
 * (and everything under them) are not searched for. Anything else is.
 */
export const NON_SECRET_FIELDS: ReadonlySet<string> = new Set([
  // where and how a key or token is placed
  "keyName",
  "placement",
  "prefix",
  // basicAuth: the user name alone is an identifier; `username:password` is searched for
  "username",
  // customToken: the token endpoint and how its answer is read
  "tokenUrl",
  "method",
  "tokenPath",
  "expiryMethod",
  "expiryPath",
  "defaultTtlSeconds",
  // oauth2: public client identifier and protocol settings (clientSecret and tokens are secret)
  "flow",
  "authorizationUrl",
  "clientId",
  "scope",
  "audience",
  "tokenAuthMethod",
  "extraTokenParams",
  "redirectUri",
  "expiresAt",
  // jwtVerify: what a caller's token must say (sharedSecret is secret)
  "algorithms",
  "issuer",
  "subject",
  "jwksUri",
  "clockSkewSeconds",
  "jwksRefreshHint",
  "failPolicy",
  "requiredClaims",
]);

/** Every string leaf under `value` (not the names of its keys). */
function collectStrings(value: unknown, into: string[], depth = 0): void {
  if (depth > 32) return;
  if (typeof value === "string") into.push(value);
  else if (Array.isArray(value)) for (const item of value) collectStrings(item, into, depth + 1);
  else if (value !== null && typeof value === "object")
    for (const item of Object.values(value)) collectStrings(item, into, depth + 1);
}

/**
 * The secret strings of a decrypted credential secret: every string value except the
 * NON_SECRET_FIELDS at its top level, plus `username:password` when both are present.
 * `authType` is accepted for the reader's sake and future per-type exceptions; the walk is generic.
 */
export function secretValues(_authType: string, secret: unknown): string[] {
  if (secret === null || typeof secret !== "object" || Array.isArray(secret)) return [];
  const values: string[] = [];
  const record = secret as Record<string, unknown>;
  for (const [field, value] of Object.entries(record)) {
    if (!NON_SECRET_FIELDS.has(field)) collectStrings(value, values);
  }
  if (typeof record.username === "string" && typeof record.password === "string")
    values.push(`${record.username}:${record.password}`);
  return values;
}

// ---------------------------------------------------------------------------------------------
// Forms of a secret
// ---------------------------------------------------------------------------------------------

const toUrlAlphabet = (base64: string) => base64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");

/**
 * The base64 characters fully determined by `bytes` when they start at byte offset `shift`
 * (mod 3) of a longer encoded text: the same characters appear in the encoding of anything that
 * contains `bytes` at that alignment.
 */
function alignedCore(bytes: Buffer, shift: number): string {
  const encoded = Buffer.concat([Buffer.alloc(shift), bytes]).toString("base64");
  const firstBit = shift * 8;
  const endBit = (shift + bytes.length) * 8;
  return encoded.slice(Math.ceil(firstBit / 6), Math.floor(endBit / 6));
}

const lowerHex = (encoded: string) => encoded.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase());
const formEncode = (value: string) => new URLSearchParams([["", value]]).toString().slice(1);
const jsonEscape = (value: string) => JSON.stringify(value).slice(1, -1);
const jsonAsciiEscape = (value: string) =>
  jsonEscape(value).replace(
    /[\u0080-\uffff]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );

/** The byte patterns searched for one secret (deduplicated by the caller). */
export function secretForms(secret: string): Buffer[] {
  if (secret.length < MIN_SECRET_LENGTH) return [];
  const texts = new Set<string>([secret]);
  const percent = encodeURIComponent(secret);
  for (const encoded of [percent, formEncode(secret)]) {
    texts.add(encoded);
    texts.add(lowerHex(encoded));
  }
  const json = jsonEscape(secret);
  texts.add(json);
  texts.add(json.replaceAll("/", "\\/"));
  const ascii = jsonAsciiEscape(secret);
  texts.add(ascii);
  texts.add(ascii.replace(/\\u([0-9a-f]{4})/g, (_match, hex: string) => `\\u${hex.toUpperCase()}`));

  // Base64 of each text form (an echo may base64 a URL or a JSON document holding the secret).
  for (const text of [...texts]) {
    const bytes = Buffer.from(text, "utf8");
    const base64 = bytes.toString("base64");
    texts.add(base64);
    texts.add(toUrlAlphabet(base64));
    for (let shift = 0; shift < 3; shift++) {
      const core = alignedCore(bytes, shift);
      if (core.length >= MIN_SECRET_LENGTH) {
        texts.add(core);
        texts.add(toUrlAlphabet(core));
      }
    }
  }
  texts.add(encodeURIComponent(Buffer.from(secret, "utf8").toString("base64")));
  const forms = [...texts].map((text) => Buffer.from(text, "utf8"));
  // Characters beyond ASCII but within Latin-1 go out as single bytes in a header (Node's rule).
  const codes = [...secret].map((char) => char.codePointAt(0) ?? 0);
  if (codes.some((code) => code >= 0x80) && codes.every((code) => code <= 0xff))
    forms.push(Buffer.from(secret, "latin1"));
  return forms;
}

// ---------------------------------------------------------------------------------------------
// Aho-Corasick over bytes, compact: most trie nodes have one child (a chain of one pattern)
// ---------------------------------------------------------------------------------------------

const NO_EDGE = -1;
const MANY_EDGES = -2;

/**
 * A cell of one of the automaton's typed arrays. Every index used is a node number below `nodes`
 * (or a byte, for the root's 256 edges), within the array's size by construction, so the cell is
 * always there; `noUncheckedIndexedAccess` cannot know that, and `?? 0` only tells the compiler.
 */
const cell = (cells: Int32Array | Int16Array, index: number): number => cells[index] ?? 0;

class Automaton {
  /** Children of the root, dense (0: none; the root is never a child). */
  private readonly rootEdges = new Int32Array(256);
  /** The byte of a node's only child, NO_EDGE or MANY_EDGES (then in `manyEdges`). */
  private readonly edgeByte: Int16Array;
  private readonly edgeNode: Int32Array;
  private readonly manyEdges = new Map<number, number>();
  private readonly manyBytes = new Map<number, number[]>();
  private readonly fail: Int32Array;
  /** Length of the longest pattern that ends at this node (as a suffix of its path), 0 if none. */
  private readonly out: Int32Array;
  private readonly depth: Int32Array;
  private nodes = 1;
  /** Length of the longest pattern. */
  readonly maxLength: number;

  constructor(patterns: readonly Buffer[]) {
    const total = patterns.reduce((sum, pattern) => sum + pattern.length, 0) + 1;
    this.edgeByte = new Int16Array(total).fill(NO_EDGE);
    this.edgeNode = new Int32Array(total);
    this.fail = new Int32Array(total);
    this.out = new Int32Array(total);
    this.depth = new Int32Array(total);
    let maxLength = 0;
    for (const pattern of patterns) {
      maxLength = Math.max(maxLength, pattern.length);
      let node = 0;
      for (const byte of pattern) {
        let child = this.child(node, byte);
        if (child === 0) {
          child = this.nodes++;
          this.depth[child] = cell(this.depth, node) + 1;
          this.addEdge(node, byte, child);
        }
        node = child;
      }
      this.out[node] = pattern.length;
    }
    this.maxLength = maxLength;
    this.link();
  }

  private child(node: number, byte: number): number {
    if (node === 0) return cell(this.rootEdges, byte);
    const single = cell(this.edgeByte, node);
    if (single === byte) return cell(this.edgeNode, node);
    if (single === MANY_EDGES) return this.manyEdges.get(node * 256 + byte) ?? 0;
    return 0;
  }

  private addEdge(node: number, byte: number, child: number): void {
    if (node === 0) {
      this.rootEdges[byte] = child;
      return;
    }
    const single = cell(this.edgeByte, node);
    if (single === NO_EDGE) {
      this.edgeByte[node] = byte;
      this.edgeNode[node] = child;
      return;
    }
    let bytes = this.manyBytes.get(node);
    if (!bytes) {
      // A second child: the node's edges move to the maps (`single` is its first child's byte).
      bytes = [single];
      this.manyBytes.set(node, bytes);
      this.manyEdges.set(node * 256 + single, cell(this.edgeNode, node));
      this.edgeByte[node] = MANY_EDGES;
    }
    this.manyEdges.set(node * 256 + byte, child);
    bytes.push(byte);
  }

  /** Failure links in breadth-first order; `out` inherits the longest pattern of the failure node. */
  private link(): void {
    const queue = new Int32Array(this.nodes);
    let head = 0;
    let tail = 0;
    for (const child of this.rootEdges) if (child) queue[tail++] = child;
    const visit = (node: number, byte: number, child: number) => {
      let fallback = cell(this.fail, node);
      while (fallback !== 0 && this.child(fallback, byte) === 0) fallback = cell(this.fail, fallback);
      const target = this.child(fallback, byte);
      const fail = target === child ? 0 : target;
      this.fail[child] = fail;
      if (this.out[child] === 0) this.out[child] = cell(this.out, fail);
      queue[tail++] = child;
    };
    while (head < tail) {
      const node = cell(queue, head++);
      const single = cell(this.edgeByte, node);
      if (single >= 0) visit(node, single, cell(this.edgeNode, node));
      else
        for (const byte of this.manyBytes.get(node) ?? []) {
          const child = this.manyEdges.get(node * 256 + byte);
          if (child !== undefined) visit(node, byte, child);
        }
    }
  }

  /**
   * The byte ranges [start, end) of `bytes` covered by a pattern, merged where they overlap or
   * touch, in order. With `openEnd` (the bytes are a cut of a longer text), a trailing part that
   * begins a pattern is covered too.
   */
  cover(bytes: Uint8Array, openEnd: boolean): Range[] {
    const ranges: Range[] = [];
    let node = 0;
    let end = 0;
    for (const byte of bytes) {
      end++;
      for (;;) {
        const next = this.child(node, byte);
        if (next !== 0 || node === 0) {
          node = next;
          break;
        }
        node = cell(this.fail, node);
      }
      const length = cell(this.out, node);
      if (length > 0) addRange(ranges, end - length, end);
    }
    const depth = cell(this.depth, node);
    if (openEnd && depth > 0) addRange(ranges, bytes.length - depth, bytes.length);
    return ranges;
  }
}

/** Bytes [start, end) of a text. */
type Range = [start: number, end: number];

/** Add [start, end) to a sorted list of disjoint ranges whose last end is at most `end`. */
function addRange(ranges: Range[], start: number, end: number): void {
  let from = start;
  let to = end;
  for (let last = ranges.at(-1); last && from <= last[1]; last = ranges.at(-1)) {
    ranges.pop();
    from = Math.min(from, last[0]);
    to = Math.max(to, last[1]);
  }
  ranges.push([from, to]);
}

// ---------------------------------------------------------------------------------------------
// The redactor
// ---------------------------------------------------------------------------------------------

export interface RedactBytesOptions {
  /**
   * Keep only the bytes before this offset of the input (a body cap). A secret that starts before
   * it is still recognised whole when the input holds `lookahead` more bytes, and is replaced whole.
   */
  limit?: number;
  /** The input is itself a cut of a longer text: a secret's beginning at its very end is redacted. */
  truncatedInput?: boolean;
}

export interface SecretRedactor {
  /** True when there is nothing to search for (every call returns its input). */
  readonly empty: boolean;
  /**
   * Bytes to read beyond a cap so that a secret crossing it is recognised (length of the longest
   * form minus one).
   */
  readonly lookahead: number;
  /** A string with every secret form replaced by REDACTED. */
  text(value: string): string;
  /**
   * Bytes with every secret form replaced by REDACTED (the marker in UTF-8), cut at `limit` in
   * the input's offsets. The result may be longer than `limit` (the marker is longer than a short
   * secret): cut it again to the cap; cutting after redaction never reveals a secret.
   */
  bytes(value: Uint8Array, options?: RedactBytesOptions): Buffer;
  /**
   * A JSON-like value (strings, arrays, plain objects, Buffers) with every string, object key and
   * buffer redacted; other values are returned as they are. The input is not changed.
   */
  value<T>(value: T): T;
}

const MARKER = Buffer.from(REDACTED, "utf8");

function splice(bytes: Uint8Array, ranges: readonly Range[], limit: number): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (const [start, end] of ranges) {
    if (start >= limit) break;
    if (start > at) parts.push(Buffer.from(bytes.buffer, bytes.byteOffset + at, start - at));
    parts.push(MARKER);
    at = end;
  }
  if (at < limit) parts.push(Buffer.from(bytes.buffer, bytes.byteOffset + at, limit - at));
  return Buffer.concat(parts);
}

class Redactor implements SecretRedactor {
  readonly empty: boolean;
  readonly lookahead: number;

  /** Null: nothing to search for, or (with `withholdAll`) too much to search for. */
  constructor(
    private readonly automaton: Automaton | null,
    private readonly withholdAll = false,
  ) {
    this.empty = automaton === null && !withholdAll;
    this.lookahead = automaton ? automaton.maxLength - 1 : 0;
  }

  text(value: string): string {
    if (value.length === 0) return value;
    if (this.withholdAll) return REDACTED;
    if (!this.automaton) return value; // nothing to search for
    const bytes = Buffer.from(value, "utf8");
    const ranges = this.automaton.cover(bytes, false);
    return ranges.length === 0 ? value : splice(bytes, ranges, bytes.length).toString("utf8");
  }

  bytes(value: Uint8Array, options: RedactBytesOptions = {}): Buffer {
    const limit = Math.min(value.length, Math.max(0, options.limit ?? value.length));
    const input = Buffer.from(value.buffer, value.byteOffset, value.length);
    if (this.withholdAll) return limit === 0 ? input.subarray(0, 0) : Buffer.from(MARKER);
    if (!this.automaton) return input.subarray(0, limit); // nothing to search for
    const scanned = input.subarray(0, Math.min(input.length, limit + this.lookahead));
    // The scanned part ends before the input does: a secret cut there starts at or after `limit`.
    const openEnd = scanned.length < input.length || options.truncatedInput === true;
    const ranges = this.automaton.cover(scanned, openEnd);
    return ranges.length === 0 ? input.subarray(0, limit) : splice(scanned, ranges, limit);
  }

  value<T>(value: T): T {
    return this.empty ? value : (this.walk(value, 0) as T);
  }

  private walk(value: unknown, depth: number): unknown {
    if (typeof value === "string") return this.text(value);
    if (value === null || typeof value !== "object") return value;
    if (depth >= MAX_VALUE_DEPTH) return REDACTED;
    if (value instanceof Uint8Array) return this.bytes(value);
    if (Array.isArray(value)) return value.map((item) => this.walk(item, depth + 1));
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return value;
    const entries = new Map<string, unknown>();
    for (const [key, item] of Object.entries(value)) entries.set(this.text(key), this.walk(item, depth + 1));
    return Object.fromEntries(entries);
  }
}

/** Redacts nothing. */
export const NO_REDACTION: SecretRedactor = new Redactor(null);

/** Redactors by the hash of their secrets, least recently used first. */
const cache = new Map<string, { redactor: Redactor; patternBytes: number }>();
let cachedPatternBytes = 0;

function build(values: readonly string[]): { redactor: Redactor; patternBytes: number } {
  const seen = new Set<string>();
  const patterns: Buffer[] = [];
  let patternBytes = 0;
  for (const value of values) {
    for (const form of secretForms(value)) {
      const key = form.toString("latin1");
      if (seen.has(key)) continue;
      seen.add(key);
      patterns.push(form);
      patternBytes += form.length;
      if (patternBytes > MAX_PATTERN_BYTES) return { redactor: new Redactor(null, true), patternBytes: 0 };
    }
  }
  return { redactor: new Redactor(new Automaton(patterns)), patternBytes };
}

/**
 * The redactor of a request: every value (secret strings from `secretValues`, fetched tokens) and
 * its forms. Values shorter than MIN_SECRET_LENGTH, undefined and null are ignored. Redactors are
 * cached by their values (a warm function builds one per credential pair and token).
 */
export function secretRedactor(values: Iterable<string | null | undefined>): SecretRedactor {
  const unique = new Set<string>();
  for (const value of values)
    if (typeof value === "string" && value.length >= MIN_SECRET_LENGTH) unique.add(value);
  if (unique.size === 0) return NO_REDACTION;
  const sorted = [...unique].sort();
  const hash = createHash("sha256");
  for (const value of sorted) hash.update(`${Buffer.byteLength(value)}:`).update(value);
  const key = hash.digest("base64");
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit.redactor;
  }
  const entry = build(sorted);
  cache.set(key, entry);
  cachedPatternBytes += entry.patternBytes;
  for (const [oldest, old] of cache) {
    if (cache.size <= CACHE_MAX_ENTRIES && cachedPatternBytes <= CACHE_MAX_PATTERN_BYTES) break;
    if (oldest === key) break;
    cache.delete(oldest);
    cachedPatternBytes -= old.patternBytes;
  }
  return entry.redactor;
}

/** Forget the cached redactors (tests). */
export function clearRedactorCache(): void {
  cache.clear();
  cachedPatternBytes = 0;
}

// ---------------------------------------------------------------------------------------------
// A capped, redacted body
// ---------------------------------------------------------------------------------------------

/** The length of the longest prefix of `bytes` of at most `max` bytes that ends on a UTF-8 character boundary. */
export function utf8PrefixLength(bytes: Uint8Array, max: number): number {
  if (bytes.length <= max) return bytes.length;
  let end = Math.max(0, max);
  // bytes[end] is the first byte left out: a continuation byte there means a split character.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return end;
}

/**
 * At most `cap` bytes of `body` to show, with the secrets redacted BEFORE the cut (so a secret
 * crossing the cap is replaced whole, never shown in part): the input is kept up to `cap` and
 * redacted (looking `redactor.lookahead` bytes further, when the body has them), then cut again to
 * `cap`, since a marker may be longer than the secret it replaced. `utf8`: both cuts fall on
 * character boundaries. `truncatedInput`: `body` is itself a cut of a longer body.
 */
export function redactedPrefix(
  redactor: SecretRedactor,
  body: Uint8Array,
  cap: number,
  options: { utf8?: boolean; truncatedInput?: boolean } = {},
): { bytes: Buffer; truncated: boolean } {
  const cut = (bytes: Uint8Array) =>
    options.utf8 ? utf8PrefixLength(bytes, cap) : Math.min(bytes.length, cap);
  const limit = cut(body);
  const redacted = redactor.bytes(body, {
    limit,
    ...(options.truncatedInput ? { truncatedInput: true } : {}),
  });
  const shown = redacted.subarray(0, cut(redacted));
  return {
    bytes: shown,
    truncated: options.truncatedInput === true || limit < body.length || shown.length < redacted.length,
  };
}
