/**
 * Content codings (RFC 9110 8.4) of HTTP bodies the gateway reads: a target's answer and a caller's
 * request body. Whatever reads a body (the payload filter, meters, transforms, the request log and
 * its redaction, the 6 MB limit) must see the decoded bytes, so bodies are decoded here, once, with
 * a bound on the decoded size (docs/data-plane.md, "Compressed bodies").
 *
 * - Codings: gzip (and x-gzip), deflate (zlib-wrapped, or raw as some servers send it), br, zstd,
 *   and any list of them (`gzip, br`: gzip applied first, so br is undone first). `identity` is no
 *   coding.
 * - zstd: every frame's header is checked first: a frame may declare at most 8 MiB of window
 *   (RFC 9659 section 3) and the frames at most the limit of content, so a forged header cannot make
 *   the decoder allocate more. Then node:zlib where the runtime has it (Node 22.15 and later, so the
 *   deployed Lambda), else (local runs on Node 20) the pure-JS `fzstd`, loaded on demand.
 * - Bounded: decoding stops as soon as the output would exceed `limit` bytes (a 64 MiB bomb costs
 *   at most `limit` bytes of memory and a few milliseconds).
 */

import { promisify } from "node:util";
import * as zlib from "node:zlib";

/** Why a body could not be decoded. */
export type CodingFailure = "unsupported" | "corrupt" | "too-large";

export class ContentCodingError extends Error {
  override name = "ContentCodingError";
  readonly failure: CodingFailure;
  /** The coding that failed, as sent (lower case, at most 40 characters). */
  readonly coding: string;
  constructor(failure: CodingFailure, coding: string) {
    // Shown in messages and headers: token characters only (RFC 9110 5.6.2).
    const shown = coding.slice(0, 40).replace(/[^a-z0-9!#$%&'*+.^_`|~-]/g, "?");
    super(`${failure} content coding ${shown}`);
    this.failure = failure;
    this.coding = shown;
  }
}

type Decoder = (input: Buffer, options: zlib.ZlibOptions | zlib.BrotliOptions) => Promise<Buffer>;

const gunzip = promisify(zlib.gunzip) as Decoder;
const inflate = promisify(zlib.inflate) as Decoder;
const inflateRaw = promisify(zlib.inflateRaw) as Decoder;
const brotliDecompress = promisify(zlib.brotliDecompress) as Decoder;
const nativeZstd = (zlib as unknown as { zstdDecompress?: (...args: unknown[]) => void }).zstdDecompress;
const zstdDecompress = nativeZstd ? (promisify(nativeZstd) as Decoder) : undefined;

/** RFC 9659 section 3: a zstd content coding uses a window of at most 8 MiB. */
export const ZSTD_MAX_WINDOW_BYTES = 8 * 1024 * 1024;
/** log2 of ZSTD_MAX_WINDOW_BYTES, given to node:zlib as ZSTD_d_windowLogMax. */
const ZSTD_WINDOW_LOG_MAX = 23;
const ZSTD_WINDOW_PARAM = (zlib.constants as unknown as Record<string, number | undefined>)
  .ZSTD_d_windowLogMax;

/** The codings of a Content-Encoding value, in the order they were applied; `identity` left out. */
export function codingsOf(contentEncoding: string | string[] | undefined): string[] {
  if (contentEncoding === undefined) return [];
  return [contentEncoding]
    .flat()
    .join(",")
    .split(",")
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== "" && coding !== "identity");
}

/** True when a deflate body starts with a zlib header (RFC 1950): method 8 and a valid check. */
const hasZlibHeader = (input: Buffer): boolean =>
  input.length >= 2 && (input.readUInt8(0) & 0x0f) === 8 && input.readUInt16BE(0) % 31 === 0;

const tooLarge = (error: unknown): boolean =>
  error instanceof RangeError || (error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE";

async function decodeOnce(coding: string, input: Buffer, limit: number): Promise<Buffer> {
  // One byte over the limit tells "too large" from "exactly the limit".
  const bounded = { maxOutputLength: limit + 1 };
  let decode: Decoder;
  let options: zlib.ZlibOptions | zlib.BrotliOptions = bounded;
  switch (coding) {
    case "gzip":
    case "x-gzip":
      decode = gunzip;
      break;
    case "deflate":
      decode = hasZlibHeader(input) ? inflate : inflateRaw;
      break;
    case "br":
      decode = brotliDecompress;
      break;
    case "zstd":
      checkZstdFrames(input, limit);
      if (!zstdDecompress) return decodeZstdPortable(input, limit);
      decode = zstdDecompress;
      if (ZSTD_WINDOW_PARAM !== undefined)
        options = { ...bounded, params: { [ZSTD_WINDOW_PARAM]: ZSTD_WINDOW_LOG_MAX } };
      break;
    default:
      throw new ContentCodingError("unsupported", coding);
  }
  let output: Buffer;
  try {
    output = await decode(input, options);
  } catch (error) {
    throw new ContentCodingError(tooLarge(error) ? "too-large" : "corrupt", coding);
  }
  if (output.length > limit) throw new ContentCodingError("too-large", coding);
  return output;
}

/**
 * `body` decoded from the codings of `contentEncoding` (undone last applied first), at most `limit`
 * bytes. Throws ContentCodingError: `unsupported` for a coding the gateway does not know, `corrupt`
 * for bytes that are not valid in their coding, `too-large` when the decoded body exceeds `limit`.
 */
export async function decodeBody(
  body: Buffer,
  contentEncoding: string | string[] | undefined,
  limit: number,
): Promise<Buffer> {
  const codings = codingsOf(contentEncoding);
  // No body (HEAD, 204, 304) has nothing to decode, whatever the header says.
  if (body.length === 0) return body;
  // Every coding is known before any work is done.
  for (const coding of codings) if (!KNOWN.has(coding)) throw new ContentCodingError("unsupported", coding);
  let decoded = body;
  for (const coding of codings.reverse()) decoded = await decodeOnce(coding, decoded, limit);
  return decoded;
}

const KNOWN = new Set(["gzip", "x-gzip", "deflate", "br", "zstd"]);

// ---- zstd on a Node without it (local runs on Node 20): fzstd after a check of the frames ------

interface ZstdFrameLimits {
  /** Largest window a frame declares (bytes). */
  window: number;
  /** Sum of the content sizes the frames declare, where they do. */
  declaredContent: number;
}

const ZSTD_MAGIC = 0xfd2fb528;

/**
 * Walks the frames of a zstd body (RFC 8878 section 3) without decoding them: the window and the
 * content size each declares. Throws ContentCodingError `corrupt` when the framing is invalid.
 */
export function zstdFrameLimits(input: Uint8Array): ZstdFrameLimits {
  const corrupt = () => new ContentCodingError("corrupt", "zstd");
  const view = new DataView(input.buffer, input.byteOffset, input.byteLength);
  const limits: ZstdFrameLimits = { window: 0, declaredContent: 0 };
  let at = 0;
  if (input.length === 0) throw corrupt();
  while (at < input.length) {
    if (at + 4 > input.length) throw corrupt();
    const magic = view.getUint32(at, true);
    if (magic >>> 4 === 0x184d2a5) {
      // A skippable frame: its size, then that many bytes.
      if (at + 8 > input.length) throw corrupt();
      at += 8 + view.getUint32(at + 4, true);
      continue;
    }
    if (magic !== ZSTD_MAGIC || at + 5 > input.length) throw corrupt();
    const descriptor = view.getUint8(at + 4);
    const contentSizeFlag = descriptor >> 6;
    const singleSegment = (descriptor >> 5) & 1;
    if ((descriptor >> 3) & 1) throw corrupt(); // the reserved bit
    const checksum = (descriptor >> 2) & 1;
    const dictionaryFlag = descriptor & 3;
    const dictionaryBytes = dictionaryFlag === 3 ? 4 : dictionaryFlag; // 0, 1, 2, 4
    const contentSizeBytes = contentSizeFlag === 0 ? singleSegment : 2 ** contentSizeFlag; // 2, 4, 8
    let cursor = at + 5;
    let window = 0;
    if (!singleSegment) {
      if (cursor + 1 > input.length) throw corrupt();
      const windowDescriptor = view.getUint8(cursor);
      const base = 2 ** (10 + (windowDescriptor >> 3));
      window = base + (base / 8) * (windowDescriptor & 7);
      cursor += 1;
    }
    cursor += dictionaryBytes;
    if (cursor + contentSizeBytes > input.length) throw corrupt();
    let contentSize: number | undefined;
    if (contentSizeBytes === 1) contentSize = view.getUint8(cursor);
    else if (contentSizeBytes === 2) contentSize = view.getUint16(cursor, true) + 256;
    else if (contentSizeBytes === 4) contentSize = view.getUint32(cursor, true);
    else if (contentSizeBytes === 8) contentSize = Number(view.getBigUint64(cursor, true));
    cursor += contentSizeBytes;
    if (singleSegment) window = contentSize ?? 0;
    limits.window = Math.max(limits.window, window);
    limits.declaredContent += contentSize ?? 0;
    // The blocks: a 3-byte header each (last flag, type, size), until the last one.
    for (let last = false; !last; ) {
      if (cursor + 3 > input.length) throw corrupt();
      const header = view.getUint16(cursor, true) | (view.getUint8(cursor + 2) << 16);
      last = (header & 1) === 1;
      const type = (header >> 1) & 3;
      if (type === 3) throw corrupt();
      cursor += 3 + (type === 1 ? 1 : header >>> 3);
    }
    at = cursor + (checksum ? 4 : 0);
  }
  if (at !== input.length) throw corrupt();
  return limits;
}

let fzstd: Promise<typeof import("fzstd")> | undefined;

/** Declared content over the limit is too large, a window over 8 MiB corrupt: before any decoding. */
function checkZstdFrames(input: Buffer, limit: number): void {
  const frames = zstdFrameLimits(input);
  if (frames.declaredContent > limit) throw new ContentCodingError("too-large", "zstd");
  if (frames.window > ZSTD_MAX_WINDOW_BYTES) throw new ContentCodingError("corrupt", "zstd");
}

/** zstd where node:zlib has none, once `checkZstdFrames` passed. */
async function decodeZstdPortable(input: Buffer, limit: number): Promise<Buffer> {
  fzstd ??= import("fzstd");
  const { Decompress } = await fzstd;
  const chunks: Uint8Array[] = [];
  let size = 0;
  const overflow = new ContentCodingError("too-large", "zstd");
  const stream = new Decompress((chunk) => {
    size += chunk.length;
    if (size > limit) throw overflow;
    chunks.push(chunk);
  });
  try {
    stream.push(input, true);
  } catch (error) {
    throw error === overflow ? overflow : new ContentCodingError("corrupt", "zstd");
  }
  return Buffer.concat(chunks, size);
}

/**
 * A response body as read (`truncated` when the read stopped at `limit`), decoded from the codings
 * of `headers["content-encoding"]`; the coding headers are removed from `headers` once the body is
 * decoded. Too large (encoded, or once decoded): empty and `truncated`, never a cut of encoded bytes
 * that no reader could decode or redact. Throws ContentCodingError `unsupported` or `corrupt`.
 */
export async function decodeAnswer(
  read: { body: Buffer; truncated: boolean },
  headers: Record<string, string | string[]>,
  limit: number,
): Promise<{ body: Buffer; truncated: boolean }> {
  const contentEncoding = headers["content-encoding"];
  if (codingsOf(contentEncoding).length === 0) return read;
  delete headers["content-encoding"];
  delete headers["content-length"];
  const tooLarge = { body: Buffer.alloc(0), truncated: true };
  if (read.truncated) return tooLarge;
  try {
    return { body: await decodeBody(read.body, contentEncoding, limit), truncated: false };
  } catch (error) {
    if (error instanceof ContentCodingError && error.failure === "too-large") return tooLarge;
    throw error;
  }
}
