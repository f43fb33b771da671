/**
 * The caller's request body, decoded: a body sent with a `Content-Encoding` (gzip, deflate, br,
 * zstd, or a list of them) is decoded once the proxy is located and before any reader of the body
 * (meters' predicates, transforms, the request log and its redaction), then forwarded decoded and
 * without the header, so the target gets exactly what was checked (docs/data-plane.md, "Compressed
 * bodies"). Bounded by the data plane's 6 MB.
 *
 * Loaded on demand by the pipeline when a request carries the header. It imports nothing the cold
 * start loads (a shared import would split the startup chunks): the pipeline turns its refusal
 * into the answer.
 */

import type { DataPlaneRequest } from "#lib/data-plane/context.ts";
import { ContentCodingError, codingsOf, decodeBody } from "#lib/net/content-coding.ts";

/** Largest request body once decoded (the 6 MB of a Lambda invocation's payload). */
export const MAX_DECODED_REQUEST_BYTES = 6 * 1024 * 1024;

/** Why the body cannot be forwarded: the status and message of the refusal. */
export interface BodyRefusal {
  status: 400 | 413 | 415;
  message: string;
}

/**
 * Decodes `request.body` in place and removes `Content-Encoding` and `Content-Length`; a refusal
 * when it cannot be decoded (the body is then dropped: encoded bytes could hide what redaction
 * must find). Idempotent: a second call finds no header.
 */
export async function decodeRequestBody(request: DataPlaneRequest): Promise<BodyRefusal | undefined> {
  const { headers } = request;
  const name = Object.keys(headers).find((key) => key.toLowerCase() === "content-encoding");
  if (name === undefined) return undefined;
  const contentEncoding = headers[name];
  delete headers[name];
  if (codingsOf(contentEncoding).length === 0) return undefined;
  try {
    request.body = await decodeBody(
      request.body ?? Buffer.alloc(0),
      contentEncoding,
      MAX_DECODED_REQUEST_BYTES,
    );
  } catch (error) {
    if (!(error instanceof ContentCodingError)) throw error;
    request.body = undefined;
    if (error.failure === "unsupported")
      return {
        status: 415,
        message: `The request's Content-Encoding cannot be decoded by the gateway (${error.coding}); send gzip, deflate, br, zstd or none`,
      };
    if (error.failure === "too-large")
      return { status: 413, message: "The request body exceeds 6 MB once decoded" };
    return { status: 400, message: `The request body could not be decoded (${error.coding})` };
  }
  for (const key of Object.keys(headers)) if (key.toLowerCase() === "content-length") delete headers[key];
  return undefined;
}
