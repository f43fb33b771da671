/**
 * What of the target's response headers reaches the caller (docs/data-plane.md, "Response headers
 * and cookies"). Pure functions: the engine calls `forwardedResponseHeaders` once per answer.
 *
 * - Hop-by-hop and framing headers (RFC 9110 7.6.1), and any header the target's `Connection`
 *   names, are dropped; Lambda sets the framing of the answer itself.
 * - `service-proxy-*` headers are the gateway's own: the target cannot send them in its name.
 * - Cookies: every tenant's proxies share one data-plane origin per region, so a cookie a target
 *   sets is confined to its own proxy: no `Domain` (host-only), and a `Path` under
 *   `/api/{proxyId}`. `__Host-` cookies cannot be confined (the prefix demands `Path=/`) and are
 *   dropped.
 */

/** Response headers never forwarded: hop-by-hop, framing, and the body's encoding (decoded). */
const DROPPED = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "content-length",
  "content-encoding",
]);

/** The prefix of the headers the gateway itself sets (service-proxy-code, -message, -warning). */
export const SERVICE_HEADER_PREFIX = "service-proxy-";

const HOST_PREFIX = "__host-";

export type CookieRewrite = { cookie: string } | { dropped: string };

/**
 * One `Set-Cookie` value, confined to the proxy whose path prefix is `/api/{proxySegment}`:
 * - every `Domain` attribute is removed, so the cookie is host-only (never sent to another host,
 *   and never widened to a parent domain of the gateway);
 * - the `Path` becomes `/api/{proxySegment}` followed by the target's path (the target's path as
 *   the target sees it; absent or not starting with `/`: the proxy's root), so the browser sends it
 *   only on requests to this proxy;
 * - a `__Host-` cookie (any case) is dropped: it is valid only with `Path=/`, which would reach
 *   every proxy of every tenant.
 * Other attributes (Expires, Max-Age, Secure, HttpOnly, SameSite, Partitioned...) are kept as sent.
 */
export function confineSetCookie(value: string, proxySegment: string): CookieRewrite {
  const [pair = "", ...attributes] = value.split(";");
  const name = pair.slice(0, pair.includes("=") ? pair.indexOf("=") : 0).trim();
  if (name.toLowerCase().startsWith(HOST_PREFIX)) return { dropped: name };
  const root = `/api/${proxySegment}`;
  let targetPath: string | undefined;
  const kept: string[] = [];
  for (const attribute of attributes) {
    const equals = attribute.indexOf("=");
    const attributeName = (equals === -1 ? attribute : attribute.slice(0, equals)).trim().toLowerCase();
    if (attributeName === "domain") continue;
    if (attributeName === "path") {
      // RFC 6265 5.2.4: the last Path wins; one not starting with "/" means the default path.
      const path = equals === -1 ? "" : attribute.slice(equals + 1).trim();
      targetPath = path.startsWith("/") ? path : undefined;
      continue;
    }
    if (attribute.trim() !== "") kept.push(attribute.trim());
  }
  const path = targetPath === undefined || targetPath === "/" ? root : `${root}${targetPath}`;
  return { cookie: [pair.trim(), `Path=${path}`, ...kept].join("; ") };
}

export interface ForwardedHeaders {
  /** Single-valued headers (a repeated one joined with ", "), lower-case names. */
  headers: Record<string, string>;
  /** Each `Set-Cookie`, confined to the proxy (Lambda's payload 2.0 `cookies`). */
  cookies: string[];
  /** Names of cookies that could not be confined and were dropped. */
  droppedCookies: string[];
}

/** The target's response headers as the caller gets them (before the gateway adds its own). */
export function forwardedResponseHeaders(
  targetHeaders: Record<string, string | string[]>,
  proxySegment: string,
): ForwardedHeaders {
  const named = new Set<string>();
  for (const [name, value] of Object.entries(targetHeaders)) {
    if (name.toLowerCase() !== "connection") continue;
    for (const token of [value].flat().join(",").split(","))
      if (token.trim()) named.add(token.trim().toLowerCase());
  }
  const result: ForwardedHeaders = { headers: {}, cookies: [], droppedCookies: [] };
  for (const [name, value] of Object.entries(targetHeaders)) {
    const lower = name.toLowerCase();
    if (DROPPED.has(lower) || named.has(lower) || lower.startsWith(SERVICE_HEADER_PREFIX)) continue;
    if (lower === "set-cookie") {
      for (const cookie of [value].flat()) {
        const rewritten = confineSetCookie(cookie, proxySegment);
        if ("cookie" in rewritten) result.cookies.push(rewritten.cookie);
        else result.droppedCookies.push(rewritten.dropped);
      }
      continue;
    }
    result.headers[lower] = Array.isArray(value) ? value.join(", ") : value;
  }
  return result;
}
