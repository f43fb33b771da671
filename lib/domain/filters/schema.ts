/**
 * Request bodies of a proxy's filters and overrides (docs/filters.md): PUT is partial (a field
 * given replaces the stored one, `null` clears it), every list is bounded, and a 400 names each
 * failing field (`ipAllow.2`, `pathOverrides.0.timeoutSeconds`). API side only (zod); the data
 * plane reads the stored items (lib/db/entities/proxy-policy.ts).
 */
import { z } from "zod";
import { PROXY_TIMEOUT_SECONDS } from "#lib/db/entities/proxy.ts";
import { DotPath } from "#lib/domain/predicates/schema.ts";
import { RESERVED_HEADER_NAMES } from "#lib/net/header-rules.ts";
import { parseCidr } from "#lib/net/ip-filter.ts";
import { hasDotSegment } from "#lib/net/path-segments.ts";
import { HeaderRecord } from "#lib/vault/secret-schemas.ts";
import {
  MAX_FILTER_HEADERS,
  MAX_IP_RANGES,
  MAX_PATH_OVERRIDES,
  MAX_PATH_PREFIX_LENGTH,
  MAX_REMOVED_FIELDS,
} from "./constants.ts";

/** RFC 9110 token: the characters allowed in a header name. */
const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Spec 8: at most 60 s, the proxy's own timeout rule (lib/db/entities/proxy.ts). */
export const MAX_OVERRIDE_TIMEOUT_SECONDS = PROXY_TIMEOUT_SECONDS.max;

const Cidr = z
  .string({ error: "must be a string" })
  .trim()
  .max(64, "at most 64 characters")
  .superRefine((text, ctx) => {
    const parsed = parseCidr(text);
    if ("problem" in parsed) ctx.addIssue({ code: "custom", message: parsed.problem });
  });

const HeaderName = z
  .string({ error: "must be a string" })
  .min(1, "must not be empty")
  .max(256, "at most 256 characters")
  .regex(HTTP_TOKEN, "must be a valid HTTP header name")
  .transform((name) => name.toLowerCase());

const StrippableHeader = HeaderName.refine(
  (name) => !RESERVED_HEADER_NAMES.has(name),
  "is managed by the gateway",
);

/** A bounded list of unique values (duplicates after lowercasing are dropped). */
const list = <T extends z.ZodType<string>>(item: T, max: number) =>
  z
    .array(item, { error: "must be an array" })
    .max(max, `at most ${max} entries`)
    .transform((values) => [...new Set(values)]);

export const UpdateFiltersBody = z
  .object({
    ipAllow: list(Cidr, MAX_IP_RANGES).nullable(),
    ipDeny: list(Cidr, MAX_IP_RANGES).nullable(),
    requiredHeaders: list(HeaderName, MAX_FILTER_HEADERS).nullable(),
    stripHeaders: list(StrippableHeader, MAX_FILTER_HEADERS).nullable(),
    removeResponseFields: list(DotPath, MAX_REMOVED_FIELDS).nullable(),
  })
  .partial()
  .strict();
export type UpdateFiltersInput = z.infer<typeof UpdateFiltersBody>;

const PathPrefix = z
  .string({ error: "must be a string" })
  .max(MAX_PATH_PREFIX_LENGTH, `at most ${MAX_PATH_PREFIX_LENGTH} characters`)
  .refine((prefix) => prefix.startsWith("/"), "must start with /")
  .refine(
    (prefix) => ![...prefix].some((c) => c <= " " || c === "\u007f" || c === "?" || c === "#"),
    "must not contain spaces, control characters, ? or #",
  )
  .refine((prefix) => !hasDotSegment(prefix), "must not contain . or .. segments or backslashes");

export const PathOverrideBody = z
  .object(
    {
      pathPrefix: PathPrefix,
      timeoutSeconds: z
        .number({ error: "must be a number" })
        .int("must be a whole number of seconds")
        .min(PROXY_TIMEOUT_SECONDS.min, `at least ${PROXY_TIMEOUT_SECONDS.min}`)
        .max(MAX_OVERRIDE_TIMEOUT_SECONDS, `at most ${MAX_OVERRIDE_TIMEOUT_SECONDS}`)
        .optional(),
      additionalHeaders: HeaderRecord.optional(),
    },
    { error: "must be an object" },
  )
  .strict()
  .refine(
    (entry) => entry.timeoutSeconds !== undefined || entry.additionalHeaders !== undefined,
    "must set timeoutSeconds or additionalHeaders",
  );

export const UpdateOverridesBody = z
  .object({
    pathOverrides: z
      .array(PathOverrideBody, { error: "must be an array" })
      .max(MAX_PATH_OVERRIDES, `at most ${MAX_PATH_OVERRIDES} entries`)
      .superRefine((entries, ctx) => {
        const seen = new Set<string>();
        entries.forEach((entry, index) => {
          if (seen.has(entry.pathPrefix))
            ctx.addIssue({ code: "custom", path: [index, "pathPrefix"], message: "repeats a path prefix" });
          seen.add(entry.pathPrefix);
        });
      })
      .nullable(),
  })
  .partial()
  .strict();
export type UpdateOverridesInput = z.infer<typeof UpdateOverridesBody>;
