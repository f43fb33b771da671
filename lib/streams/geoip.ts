/**
 * The GeoIP database of the telemetry consumer (docs/telemetry.md, "Country"): an IP address ->
 * its ISO 3166-1 alpha-2 country, from `@ip-location-db/geo-whois-asn-country-mmdb` (IPv4 and
 * IPv6, 7.8 MB, read with `mmdb-lib`). Used in the stream consumer only, never on the data plane's
 * hot path. The data: GeoFeed + Whois + ASN by sapics/ip-location-db; the package is CC0-1.0 and the
 * statistics data in it is by the Number Resource Organization (NRO, nro.net), CC BY 4.0
 * (attribution in docs/telemetry.md and the README).
 *
 * Deployed, the file is copied beside the consumer's bundle (`packageFiles`); locally it is read
 * from node_modules. Loaded once per warm function, on the first lookup.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { Reader, type Response } from "mmdb-lib";
import { GEOIP_DATABASE_FILE } from "#lib/infra/region-stream.ts";
import { describeError, log } from "#lib/log.ts";
import type { CountryLookup } from "#lib/shared/telemetry/country.ts";

let reader: Reader<Response> | null | undefined;

function databasePath(): string {
  const beside = fileURLToPath(new URL(`./${basename(GEOIP_DATABASE_FILE)}`, import.meta.url));
  return existsSync(beside) ? beside : createRequire(import.meta.url).resolve(GEOIP_DATABASE_FILE);
}

function open(): Reader<Response> | null {
  try {
    return new Reader<Response>(readFileSync(databasePath()));
  } catch (error) {
    // Without the database every country is the header's or XX; telemetry still counts.
    log.error("GeoIP database could not be opened", describeError(error));
    return null;
  }
}

/** The country of an address, or undefined (unknown address, private range, no database). */
export const geoipCountry: CountryLookup = (ip) => {
  if (reader === undefined) reader = open();
  if (!reader) return undefined;
  const address = ip.startsWith("::ffff:") && ip.includes(".") ? ip.slice(7) : ip;
  // ip-location-db rows are `{country_code}` (not one of the MaxMind shapes mmdb-lib types).
  const row = reader.get(address) as { country_code?: unknown } | null;
  return typeof row?.country_code === "string" ? row.country_code : undefined;
};
