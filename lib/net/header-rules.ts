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

/**
 * Headers that tell a server the client's address. A caller's own are never forwarded (any caller
 * can write them); the gateway sets `X-Forwarded-For`, `X-Real-IP` and `Forwarded` (RFC 7239) from
 * the address the request came from, so a target reads the same truth whichever it trusts.
 */
export const CLIENT_ADDRESS_HEADER_NAMES: ReadonlySet<string> = new Set([
  "forwarded",
  "x-real-ip",
  "true-client-ip",
  "cf-connecting-ip",
  "fastly-client-ip",
  "x-client-ip",
  "x-cluster-client-ip",
  "client-ip",
]);

/** True for a header naming the client's address (any `X-Forwarded-*` too), whatever its case. */
export const isClientAddressHeader = (name: string): boolean => {
  const lower = name.toLowerCase();
  return lower.startsWith("x-forwarded-") || CLIENT_ADDRESS_HEADER_NAMES.has(lower);
};

/** The client-address headers the gateway sends for a caller at `address`. */
export function clientAddressHeaders(address: string): Record<string, string> {
  // RFC 7239 section 6: an IPv6 address is bracketed and the whole node quoted.
  const node = address.includes(":") ? `"[${address}]"` : address;
  return { "x-forwarded-for": address, "x-real-ip": address, forwarded: `for=${node}` };
}
