/**
 * The service's own origin, for the CSRF rule of cookie-authenticated requests (issue 21,
 * docs/accounts.md): a browser sends `Origin` on every request whose method is not GET or HEAD, and
 * a page of another site cannot forge it. "Own" is the origin of the web application (`APP_URL`)
 * or of the API's own public base URL (the console may be served from either).
 */
import { getConfig } from "#lib/config.ts";

/** Methods that change nothing: no Origin check for them. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);

/** The origin (`scheme://host[:port]`) of a URL, or undefined when it is not an http(s) URL. */
function originOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.origin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether an `Origin` header names one of this service's own origins: that of
 * `getConfig().appUrl` or of `publicBaseUrl` (the request's public base URL). Compared as
 * serialised origins (scheme, host and port, case-normalised); a missing, `null` or malformed
 * Origin is not ours.
 */
export function isOwnOrigin(origin: string | undefined, publicBaseUrl: string): boolean {
  if (!origin || origin.trim() === "null") return false;
  const given = originOf(origin.trim());
  if (!given) return false;
  return [getConfig().appUrl, publicBaseUrl].some((url) => originOf(url) === given);
}
