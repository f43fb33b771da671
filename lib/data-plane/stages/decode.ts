/**
 * The caller's request body, decoded: a body sent with a `Content-Encoding` (gzip, deflate, br,
 * zstd, or a list of them) is decoded once the proxy is located and before any reader of the body
 * (meters' predicates, transforms, the request log and its redaction), then forwarded decoded and
 * without the header, so the target gets exactly what was checked (docs/data-plane.md, "Compressed
 * bodies"). Decoding is bounded by the data plane's 6 MB.
 */
import { ACCEPTED_CODINGS, ContentCodingError, codingsOf, decodeBody } from "../../net/content-coding.ts";
import { type Answer, type RequestContext, serviceAnswer } from "../context.ts";

/** Largest request body once decoded (the 6 MB of a Lambda invocation's payload). */
export const MAX_DECODED_REQUEST_BYTES = 6 * 1024 * 1024;

const refused = (status: number, message: string, extra: Record<string, string> = {}): Answer =>
  serviceAnswer(status, { code: "proxy-access-denied", message }, extra);

/** Decodes `ctx.request.body` in place; an answer when it cannot be decoded. Idempotent. */
export async function decodeRequestBody(ctx: RequestContext): Promise<Answer | undefined> {
  const { headers } = ctx.request;
  const name = Object.keys(headers).find((key) => key.toLowerCase() === "content-encoding");
  if (name === undefined) return undefined;
  const contentEncoding = headers[name];
  delete headers[name];
  if (codingsOf(contentEncoding).length === 0) return undefined;
  try {
    ctx.request.body = await decodeBody(
      ctx.request.body ?? Buffer.alloc(0),
      contentEncoding,
      MAX_DECODED_REQUEST_BYTES,
    );
  } catch (error) {
    if (!(error instanceof ContentCodingError)) throw error;
    // Never logged as it came: encoded bytes could hide what redaction must find.
    ctx.request.body = undefined;
    if (error.failure === "unsupported")
      return refused(
        415,
        `The request's Content-Encoding cannot be decoded by the gateway (${error.coding}); send gzip, deflate, br, zstd or none`,
        { "accept-encoding": ACCEPTED_CODINGS },
      );
    if (error.failure === "too-large") return refused(413, "The request body exceeds 6 MB once decoded");
    return refused(400, `The request body could not be decoded (${error.coding})`);
  }
  for (const key of Object.keys(headers)) if (key.toLowerCase() === "content-length") delete headers[key];
  return undefined;
}
