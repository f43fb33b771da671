/**
 * The country of a request (spec 2.12, ISO 3166-1 alpha-2): a GeoIP lookup of the caller's address,
 * when the consumer has one and the record carries an address; else `XX`. The
 * `CloudFront-Viewer-Country` header comes first only where the deployment puts CloudFront in front
 * of the data plane (TRUST_CLOUDFRONT_VIEWER_COUNTRY=true): a function URL is called directly, so
 * without CloudFront the header is whatever the caller chose to send. Looked up in the stream
 * consumer only, never on the data plane's hot path. Pure (the lookup and the setting are given).
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

export interface CountrySettings {
  /** Whether `CloudFront-Viewer-Country` was set by CloudFront (the deployment's setting). */
  trustViewerCountry: boolean;
}

export const TRUST_VIEWER_COUNTRY_ENV = "TRUST_CLOUDFRONT_VIEWER_COUNTRY";

/** The setting from the environment: off unless `true`; any other value than true/false is refused. */
export function countrySettingsOf(env: Readonly<Record<string, string | undefined>>): CountrySettings {
  const value = env[TRUST_VIEWER_COUNTRY_ENV]?.trim() ?? "";
  if (value !== "" && value !== "true" && value !== "false")
    throw new Error(`Invalid configuration: ${TRUST_VIEWER_COUNTRY_ENV}: must be true or false`);
  return { trustViewerCountry: value === "true" };
}

export function countryOf(
  headers: Readonly<Record<string, string | readonly string[]>> | undefined,
  sourceIp?: string,
  lookup?: CountryLookup,
  settings: CountrySettings = { trustViewerCountry: false },
): string {
  if (settings.trustViewerCountry)
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
