/**
 * Request bodies of the regional resources (spec 4.5-4.8). Types are inferred from these schemas.
 * A field whose rule is its stored type (an effect, a flag, the credential type) is the entity's
 * own schema (lib/db/entities: zod/mini inside these classic objects); the others add the input
 * rules (lengths, trimming, URL and alias forms, the proxy entity's timeout bounds).
 * Secrets are validated per auth type by lib/vault/secret-schemas.ts; rules by
 * lib/domain/rules/rule-schema.ts.
 */
import { z } from "zod";
import { CredentialItem } from "#lib/db/entities/credential.ts";
import { PROXY_TIMEOUT_SECONDS, ProxyItem } from "#lib/db/entities/proxy.ts";
import { TargetItem } from "#lib/db/entities/target.ts";
import { BaseUrl, RelativePath } from "#lib/net/url-rules.ts";
import { HeaderRecord, QueryParamRecord } from "#lib/vault/secret-schemas.ts";
import { storedDocumentIssues } from "./input-checks.ts";
import { text } from "./validation.ts";

const Id = z.string().trim().min(1, "must not be empty").max(64);
const Region = z.string().trim().min(1, "must not be empty").max(32);
const Notes = z.string().max(2000, "at most 2000 characters");

/**
 * A proxy's additional headers and query parameters follow the credential secrets' rules (one
 * declaration, lib/vault/secret-schemas.ts): RFC 9110 header names, no gateway-managed names
 * (`Host`, framing and hop-by-hop headers), no control characters in values.
 */
export const AdditionalHeaders = HeaderRecord;
export const AdditionalQueryParams = QueryParamRecord;
/**
 * Merged into JSON bodies of POST/PUT/PATCH target requests; at most 16 KB as JSON. Stored as a
 * DynamoDB map, so it must be a document DynamoDB stores and gives back: no empty keys, numbers
 * in range (lib/http/input-checks.ts; nesting is bounded for every body there).
 */
export const AdditionalData = z
  .record(z.string(), z.unknown())
  .superRefine((data, ctx) => {
    for (const issue of storedDocumentIssues(data))
      ctx.addIssue({ code: "custom", path: issue.path, message: issue.problem });
  })
  .refine((data) => JSON.stringify(data).length <= 16_384, "at most 16 KB as JSON");

// ---- credentials (4.5); the secret is parsed separately, per auth type ----
export const CreateCredentialBody = z
  .object({
    credentialName: text(128),
    credentialType: CredentialItem.shape.credentialType,
    authType: z.string().min(1).max(32),
    region: Region,
    singleUse: z.optional(CredentialItem.shape.singleUse),
    credentialDefaultRuleEffect: z.optional(CredentialItem.shape.credentialDefaultRuleEffect),
    notes: Notes.optional(),
    secret: z.unknown().refine((value) => value !== undefined, "is required"),
  })
  .strict();
export const UpdateCredentialBody = z
  .object({
    credentialName: text(128).optional(),
    notes: Notes.optional(),
    credentialDefaultRuleEffect: z.optional(CredentialItem.shape.credentialDefaultRuleEffect),
  })
  .strict();
export type CreateCredentialInput = z.infer<typeof CreateCredentialBody>;

// ---- targets (4.6) ----
export const CreateTargetBody = z
  .object({
    targetName: text(128),
    targetRegion: Region,
    targetBaseURL: BaseUrl,
    targetTestPath: RelativePath,
    targetDefaultRuleEffect: z.optional(TargetItem.shape.targetDefaultRuleEffect),
    notes: Notes.optional(),
  })
  .strict();
export const UpdateTargetBody = z
  .object({
    targetName: text(128).optional(),
    targetBaseURL: BaseUrl.optional(),
    targetTestPath: RelativePath.optional(),
    targetDefaultRuleEffect: z.optional(TargetItem.shape.targetDefaultRuleEffect),
    notes: Notes.optional(),
  })
  .strict();
export type CreateTargetInput = z.infer<typeof CreateTargetBody>;
export type UpdateTargetInput = z.infer<typeof UpdateTargetBody>;

// ---- proxies (4.7) ----
export const ProxyAlias = z
  .string()
  .trim()
  .toLowerCase()
  .regex(
    /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/,
    "must be 1-63 of a-z, 0-9 and -, not starting or ending with -",
  );
/** Target timeout of a proxy: the proxy entity's rule (spec 8: default 30 s, maximum 60 s). */
export const ProxyTimeoutSeconds = z
  .number()
  .int()
  .min(PROXY_TIMEOUT_SECONDS.min)
  .max(PROXY_TIMEOUT_SECONDS.max);

const proxyFields = {
  proxyProxyCredentialId: Id,
  proxyTargetId: Id,
  proxyTargetCredentialId: Id,
  proxyActive: ProxyItem.shape.proxyActive,
  proxyDefaultRuleEffect: ProxyItem.shape.proxyDefaultRuleEffect,
  proxyAlias: ProxyAlias.nullable(),
  proxyAdditionalHeaders: AdditionalHeaders,
  proxyAdditionalQueryParams: AdditionalQueryParams,
  proxyAdditionalData: AdditionalData,
  proxyTimeoutSeconds: ProxyTimeoutSeconds,
  notes: Notes,
};
export const UpdateProxyBody = z
  .object({ proxyName: text(128), ...proxyFields })
  .partial()
  .strict();
export const CreateProxyBody = UpdateProxyBody.required({
  proxyName: true,
  proxyProxyCredentialId: true,
  proxyTargetId: true,
  proxyTargetCredentialId: true,
})
  .extend({ proxyRegion: Region })
  .strict();
export type CreateProxyInput = z.infer<typeof CreateProxyBody>;
export type UpdateProxyInput = z.infer<typeof UpdateProxyBody>;

/** Fields that can never change after creation: a PUT naming one gets a 400 naming it. */
export const IMMUTABLE_FIELDS = {
  credential: ["region", "credentialRegion", "credentialType", "authType", "credentialAuthType", "secret"],
  target: ["targetRegion"],
  proxy: ["proxyRegion"],
} as const;
