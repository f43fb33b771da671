/**
 * Compression of the bodies kept in a request-log item (docs/scale.md "Where logged bodies
 * belong", docs/request-logs.md "Bodies"). The data plane stores a body as text (UTF-8, or base64 of
 * raw bytes), already redacted and capped; here that stored text is gzip-compressed (level 6) into
 * a binary attribute when that makes it smaller, and a reader turns it back into the same text.
 *
 * Redaction always happens before: `compressStoredBody` receives the text that would otherwise be
 * stored as it is. Decompression is bounded: a corrupt or hostile item cannot make a reader inflate
 * more than the body cap plus a margin.
 */
import { gunzipSync, gzipSync } from "node:zlib";

/** The one compression a stored body may carry (its `...BodyCompression` attribute). */
export type BodyCompression = "gzip";
/** A stored body shorter than this (UTF-8 bytes) is kept as text: gzip's header would eat the gain. */
export const BODY_COMPRESSION_MIN_BYTES = 1024;
/** gzip level: docs/scale.md measured 6 as the best ratio for the CPU on list and prose JSON. */
export const BODY_GZIP_LEVEL = 6;
/** What a reader may inflate beyond the body cap before it gives up on an item. */
const INFLATE_MARGIN_BYTES = 1024;

/** A stored body as written: the text itself, or its gzip bytes with the flag that says so. */
export type CompressedBody =
  | { body: string; compression: null }
  | { body: Buffer; compression: BodyCompression };

/**
 * The stored (redacted, capped) body text, gzip-compressed when it is at least
 * BODY_COMPRESSION_MIN_BYTES long and the gzip output is smaller than its UTF-8 bytes; otherwise
 * the text unchanged.
 */
export function compressStoredBody(text: string): CompressedBody {
  const raw = Buffer.from(text, "utf8");
  if (raw.length < BODY_COMPRESSION_MIN_BYTES) return { body: text, compression: null };
  const packed = gzipIfSmaller(raw);
  return packed ? { body: packed, compression: "gzip" } : { body: text, compression: null };
}

/**
 * The gzip (level 6) of `raw`, or undefined when it is not smaller (incompressible bytes). Stored
 * text of 1 KiB or more practically always shrinks: base64 text of random bytes still loses its
 * base64 overhead (a quarter), so this guard is for what deflate cannot shrink at all.
 */
export function gzipIfSmaller(raw: Uint8Array): Buffer | undefined {
  const packed = gzipSync(raw, { level: BODY_GZIP_LEVEL });
  return packed.length < raw.length ? packed : undefined;
}

/** A stored body that cannot be read back (corrupt, not gzip, or inflating past the bound). */
export class UnreadableBodyError extends Error {
  override name = "UnreadableBodyError";
}

/**
 * The text of a stored body: text as it is, gzip bytes inflated (to at most `capBytes` plus a small
 * margin; the writer never stores more than `capBytes`). Throws UnreadableBodyError for a body that
 * is not what its flag says, never anything larger.
 */
export function storedBodyText(
  body: string | Uint8Array,
  compression: BodyCompression | null | undefined,
  capBytes: number,
): string {
  if (!compression) {
    if (typeof body === "string") return body;
    throw new UnreadableBodyError("a binary body without a compression flag");
  }
  if (typeof body === "string") throw new UnreadableBodyError(`a ${compression} body stored as text`);
  let inflated: Buffer;
  try {
    inflated = gunzipSync(body, { maxOutputLength: capBytes + INFLATE_MARGIN_BYTES });
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw new UnreadableBodyError(
      code === "ERR_BUFFER_TOO_LARGE" || (error as Error).name === "RangeError"
        ? `the ${compression} body inflates past ${capBytes + INFLATE_MARGIN_BYTES} bytes`
        : `the ${compression} body is corrupt (${code ?? (error as Error).message})`,
    );
  }
  return inflated.toString("utf8");
}
