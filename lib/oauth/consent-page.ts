/**
 * The authorization endpoint's pages (docs/mcp-oauth.md): the consent page, and the error page
 * shown for any error in the authorization request (errors are never redirected to the client). Every
 * value is HTML-escaped; the pages hold no secret (the user types their API token into the form);
 * the answer carries a strict Content-Security-Policy and may not be framed.
 */
import type { AuthorizationParams, ClientAndRedirect } from "./authorization-server.ts";

/** The authorization request's parameters the form posts back unchanged. */
export const AUTHORIZATION_PARAMS = [
  "response_type",
  "client_id",
  "redirect_uri",
  "code_challenge",
  "code_challenge_method",
  "state",
  "resource",
  "scope",
] as const;

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};
export const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);

/**
 * The page's security headers. `form-action` names the redirect URI's origin besides 'self':
 * browsers apply it to the redirect that answers the form too.
 */
export function pageHeaders(redirectOrigin?: string): Record<string, string> {
  const formAction = redirectOrigin ? `'self' ${redirectOrigin}` : "'self'";
  return {
    "Content-Type": "text/html; charset=utf-8",
    "Content-Security-Policy": `default-src 'none'; style-src 'unsafe-inline'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
  };
}

const STYLE =
  "body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;line-height:1.5}" +
  "code{word-break:break-all}label,input{display:block;width:100%}input{padding:.4rem;margin:.3rem 0 1rem}" +
  "button{padding:.5rem 1rem;margin-right:.5rem}.error{color:#a00}";

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;

export function consentPage(
  request: ClientAndRedirect & AuthorizationParams,
  params: Map<string, string>,
  options: { authorizeUrl: string; error?: string },
): string {
  const hidden = AUTHORIZATION_PARAMS.filter((name) => params.has(name))
    .map((name) => `<input type="hidden" name="${name}" value="${escapeHtml(params.get(name) ?? "")}">`)
    .join("");
  const redirect = new URL(request.redirectUri);
  return page(
    "Authorize MCP access",
    `<h1>Authorize access to the MCP endpoint</h1>
<p>The application <strong>${escapeHtml(request.client.clientName)}</strong> (a name it gave itself) asks
to act as you on <code>${escapeHtml(request.resource)}</code>, with everything your account may do.</p>
<p>After you approve, you are sent back to <code>${escapeHtml(redirect.origin)}</code>.
Client id: <code>${escapeHtml(request.client.clientId)}</code>.</p>
${options.error ? `<p class="error" role="alert">${escapeHtml(options.error)}</p>` : ""}
<form method="post" action="${escapeHtml(options.authorizeUrl)}">${hidden}
<label for="token">Your API token</label>
<input id="token" name="token" type="password" autocomplete="off" spellcheck="false">
<button type="submit" name="consent" value="approve">Approve</button>
<button type="submit" name="consent" value="deny">Deny</button>
</form>`,
  );
}

/** The page of an authorization request that cannot be answered: the error code and what is wrong. */
export function errorPage(code: string, message: string): string {
  return page(
    "Authorization error",
    `<h1>This authorization request cannot be answered</h1><p class="error">${escapeHtml(code)}: ${escapeHtml(message)}</p>
<p>Nothing was sent back to the application. Start again from the application that sent you here.</p>`,
  );
}
