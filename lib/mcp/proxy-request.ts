/**
 * `execute_proxy_read_request` (spec 4.15): one GET through a proxy's regional data plane
 * (`config.dataPlaneUrls`), presented with the proxy's own caller credential as a caller would
 * present it (docs/caller-authentication.md), answering {status, headers, body}.
 *
 * The server holds the proxy credential's secret in the vault and decrypts it here, as the
 * credential test does; the agent never sees it. A `jwtVerify` proxy credential holds no signing
 * key (only what a caller's token must say), so the server cannot present it: the tool refuses
 * with a message telling the agent to call the proxy URL with a token of its own.
 *
 * Nothing of a secret leaves: every secret value of the proxy credential and of the target
 * credential, in every form an echo shows (lib/vault/secret-redaction.ts, the request logs' and
 * the credential test's redactor), is replaced by the marker in the headers and the body. The
 * token the data plane fetched for the target (customToken, oauth2) is known to the data plane
 * only: the request asks it to redact its answer (`service-proxy-redact`), with the same redactor
 * over every secret the request used, fetched token included.
 */
import { getConfig } from "#lib/config.ts";
import { REDACT_HEADER } from "#lib/data-plane/context.ts";
import type { ClientAccess } from "#lib/domain/access.ts";
import { loadCredentialSecret, shownAnswer } from "#lib/domain/credential-test.ts";
import { requireProxy } from "#lib/domain/proxies.ts";
import { OutboundConnectError, OutboundTimeoutError, sendOutbound } from "#lib/net/outbound.ts";
import { setQueryPairs } from "#lib/net/query-pairs.ts";
import {
  badRequest,
  serviceUnavailable,
  upstreamFailed,
  upstreamTimedOut,
  validationFailed,
} from "#lib/shared/errors.ts";
import { applyTargetCredential, type OutgoingRequest } from "#lib/vault/apply-credential.ts";
import { secretRedactor, secretValues } from "#lib/vault/secret-redaction.ts";
import type { TargetSecret } from "#lib/vault/secret-schemas.ts";

/** Body bytes shown (as the credential test). */
export const PROXY_READ_BODY_LIMIT = 64 * 1024;
const TIMEOUT_MS = 30_000;
/** Auth types the server can present as the caller. */
export const PRESENTABLE_PROXY_AUTH_TYPES = ["apiKey", "bearer", "jwt", "basicAuth"] as const;

export interface ProxyReadInput {
  proxyId: string;
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
}

export async function executeProxyReadRequest({ clientId }: ClientAccess, input: ProxyReadInput) {
  // A dot segment would leave the proxy's own path (`/api/{proxyId}/`) once the URL is resolved.
  if (/(^|\/)(\.|%2e){1,2}(\/|$)/i.test(input.path))
    throw validationFailed([{ field: "path", problem: "must not contain . or .. segments" }]);
  const { proxy } = await requireProxy(clientId, input.proxyId);
  const base = getConfig().dataPlaneUrls[proxy.proxyRegion];
  if (!base) throw serviceUnavailable(`The data plane of ${proxy.proxyRegion} has no known address`);
  const caller = await loadCredentialSecret(clientId, proxy.proxyProxyCredentialId);
  if (!(PRESENTABLE_PROXY_AUTH_TYPES as readonly string[]).includes(caller.authType))
    throw badRequest(
      `A ${caller.authType} proxy credential cannot be presented by the server (it holds no signing key): call ${base.replace(/\/$/, "")}/api/${proxy.proxyId}/ with a token of your own`,
    );
  const target = await loadCredentialSecret(clientId, proxy.proxyTargetCredentialId);
  const redactor = secretRedactor([
    ...secretValues(caller.authType, caller.secret),
    ...secretValues(target.authType, target.secret),
  ]);

  const url = new URL(`${base.replace(/\/$/, "")}/api/${encodeURIComponent(proxy.proxyId)}/`);
  url.pathname += input.path.replace(/^\/+/, "");
  setQueryPairs(url, input.query);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers ?? {})) headers[name.toLowerCase()] = value;
  // The data plane redacts what only it knows: the token it fetched for the target (customToken,
  // oauth2), with every other secret of the request (lib/data-plane/answer-redaction.ts).
  headers[REDACT_HEADER] = "secrets";
  const request: OutgoingRequest = { method: "GET", url, headers };
  // The caller's credential last, as the caller would send it: extra headers cannot override it.
  const applied = applyTargetCredential(request, caller.authType, caller.secret as TargetSecret);
  try {
    const response = await sendOutbound({
      method: "GET",
      url: applied.url,
      headers: applied.headers,
      timeoutMs: TIMEOUT_MS,
      maxResponseBytes: PROXY_READ_BODY_LIMIT + redactor.lookahead,
    });
    return shownAnswer(redactor, response, PROXY_READ_BODY_LIMIT);
  } catch (error) {
    if (error instanceof OutboundTimeoutError)
      throw upstreamTimedOut("The data plane did not answer in time");
    if (error instanceof OutboundConnectError) throw upstreamFailed("The data plane could not be reached");
    throw error;
  }
}
