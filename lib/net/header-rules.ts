/**
 * Header names the gateway itself controls on an outgoing request, declared once (no
 * dependencies, so the data plane's bundle can use it). Neither a credential secret, a proxy's
 * additional headers nor a caller can set them: they decide framing, routing or the connection,
 * and setting them would break the request or smuggle a second one.
 */
export const RESERVED_HEADER_NAMES: ReadonlySet<string> = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
  "proxy-connection",
  "expect",
]);

/** A header value an HTTP client sends: no CR, LF, NUL or other control characters (tab allowed), Latin-1 at most. */
export const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** True when configuration may set this header to this value on an outgoing request. */
export const isSettableHeader = (name: string, value: string): boolean =>
  !RESERVED_HEADER_NAMES.has(name.toLowerCase()) && HEADER_VALUE.test(value);
