/**
 * The caller's answer with every secret of the request redacted, on request (docs/data-plane.md,
 * "Redacted answers"): a caller that sends `service-proxy-redact: secrets` gets the answer with
 * every form of every secret the request used replaced by `[redacted]`, in its header values, its
 * cookies and its body: the stored secrets of both credentials and the token the gateway fetched
 * for the target (customToken, oauth2), which only this function knows (it is fetched here and
 * kept in this function's memory). The MCP tool `execute_proxy_read_request` asks for it: it must
 * not show a fetched token to an agent.
 *
 * It is the request log's redactor over the same values (`requestSecretValues`, stages/log.ts).
 * Asking reveals nothing a caller does not already have: without it, an echoing target shows the
 * caller every secret in clear. Loaded on demand with the request log's module (request-log.ts
 * re-exports it): a cold start does not carry it.
 */

import type { requestSecretValues } from "#lib/data-plane/stages/log.ts";
import { secretRedactor, secretValues } from "#lib/vault/secret-redaction.ts";
import type { DataPlaneResponse, RequestContext } from "./context.ts";

/**
 * `response` with the request's secrets redacted. `collect` is requestSecretValues (stages/log.ts),
 * passed by the pipeline: importing it here would move the log stage's code into a chunk shared
 * with this one, and the cold start would load the chunk's import and export lists (1.2 KiB).
 */
export function redactAnswer(
  ctx: RequestContext,
  response: DataPlaneResponse,
  collect: typeof requestSecretValues,
): DataPlaneResponse {
  const redactor = secretRedactor(collect(ctx, secretValues));
  if (redactor.empty) return response;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) headers[name] = redactor.text(value);
  return {
    status: response.status,
    headers,
    ...(response.cookies ? { cookies: response.cookies.map((cookie) => redactor.text(cookie)) } : {}),
    body: redactor.bytes(response.body),
  };
}
