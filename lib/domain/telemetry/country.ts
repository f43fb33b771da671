/**
 * The country of a request (spec 2.12, ISO 3166-1 alpha-2): the `CloudFront-Viewer-Country` header
 * when present and well formed; else a GeoIP lookup of the caller's address, when the consumer has
 * one and the record carries an address; else `XX`. Looked up in the stream consumer only, never
 * on the data plane's hot path. Pure (the lookup is given).
 */

/** Unknown country. */
export const UNKNOWN_COUNTRY = "XX";

/** A GeoIP database: an IP address -> its ISO 3166-1 alpha-2 country, or undefined. */
export type CountryLookup = (ip: string) => string | undefined;

const ALPHA2 = /^[A-Z]{2}$/;
const HEADER = "cloudfront-viewer-country";

const alpha2 = (value: unknown): string | undefined => {
  const text = typeof value === "string" ? value.trim().toUpperCase() : undefined;
  return text && ALPHA2.test(text) ? text : undefined;
};

export function countryOf(
  headers: Readonly<Record<string, string | readonly string[]>> | undefined,
  sourceIp?: string,
  lookup?: CountryLookup,
): string {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (name.toLowerCase() !== HEADER) continue;
    const country = alpha2(Array.isArray(value) ? value[0] : value);
    if (country) return country;
  }
  if (sourceIp && lookup) {
    try {
      const country = alpha2(lookup(sourceIp));
      if (country) return country;
    } catch {
      // a failing lookup is an unknown country, not a failed batch
    }
  }
  return UNKNOWN_COUNTRY;
}
