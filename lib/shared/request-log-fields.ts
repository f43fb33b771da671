/**
 * Fields of a request-log record that the data plane (which writes it), the request-log entity
 * (which reads it) and the Core API (which projects it) share.
 */

/** Each stored body (request, response) is at most this many bytes of stored text. */
export const REQUEST_LOG_BODY_CAP_BYTES = 32 * 1024;
/** The 20 booleans of validationData (spec 2.11), in the spec's order. */
export const VALIDATION_FIELDS = [
  "proxyExists",
  "proxyActive",
  "proxyAuthenticated",
  "proxyCredentialExists",
  "proxyCredentialActive",
  "proxyCredentialRelationship",
  "proxyCredentialScopeValid",
  "proxyScopeValid",
  "targetExists",
  "targetRelationship",
  "targetScopeValid",
  "targetCredentialExists",
  "targetCredentialActive",
  "targetCredentialRelationship",
  "targetCredentialScopeValid",
  "requestValid",
  "requestSent",
  "responseReceived",
  "systemError",
  "requestConfigError",
] as const;
export type ValidationField = (typeof VALIDATION_FIELDS)[number];
export type ValidationData = Record<ValidationField, boolean>;

/** Fields only the detail projection shows (the list leaves them out). */
export const REQUEST_LOG_DETAIL_FIELDS = [
  "requestHeaders",
  "requestHeadersTruncated",
  "requestBody",
  "requestBodyEncoding",
  "requestBodyTruncated",
  "requestBodyBytes",
  "responseHeaders",
  "responseHeadersTruncated",
  "responseBody",
  "responseBodyEncoding",
  "responseBodyTruncated",
  "responseBodyBytes",
  "apiParamsTruncated",
] as const;
