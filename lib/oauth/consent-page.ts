/**
 * The authorization endpoint's pages (docs/mcp-oauth.md): the consent page, and the error page
 * shown for any error in the authorization request (errors are never redirected to the client). Every
 * value is HTML-escaped; the pages hold no secret (the person signs in with their e-mail and password,
 * or approves as the user of their console session); the answer carries a strict
 * Content-Security-Policy and may not be framed.
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
  "button{padding:.5rem 1rem;margin-right:.5rem}.error{color:#a00}.field-error{color:#a00;margin:-.7rem 0 1rem}";

/** What the form shows: who is signed in (a session), and an error with the field it belongs to. */
export interface ConsentPageOptions {
  authorizeUrl: string;
  /** The e-mail address of the console session's user: the page approves without a password. */
  signedInAs?: string;
  /** The address typed before, shown again after an error (never the password). */
  email?: string;
  error?: { message: string; field?: "email" | "password" };
}

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;

export function consentPage(
  request: ClientAndRedirect & AuthorizationParams,
  params: Map<string, string>,
  options: ConsentPageOptions,
): string {
  const hidden = AUTHORIZATION_PARAMS.filter((name) => params.has(name))
    .map((name) => `<input type="hidden" name="${name}" value="${escapeHtml(params.get(name) ?? "")}">`)
    .join("");
  const redirect = new URL(request.redirectUri);
  const error = options.error;
  const fieldError = (field: "email" | "password") =>
    error?.field === field
      ? `<p id="${field}-error" class="field-error" role="alert">${escapeHtml(error.message)}</p>`
      : "";
  const described = (field: "email" | "password") =>
    error?.field === field ? ` aria-invalid="true" aria-describedby="${field}-error"` : "";
  const generalError =
    error && !error.field ? `<p class="error" role="alert">${escapeHtml(error.message)}</p>` : "";
  const who = options.signedInAs
    ? `<p>Signed in as <strong>${escapeHtml(options.signedInAs)}</strong>.</p>
<input type="hidden" name="signed_in" value="session">`
    : `<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" spellcheck="false" value="${escapeHtml(options.email ?? "")}"${described("email")}>
${fieldError("email")}<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password"${described("password")}>
${fieldError("password")}`;
  return page(
    "Authorize MCP access",
    `<h1>Authorize access to the MCP endpoint</h1>
<p>The application <strong>${escapeHtml(request.client.clientName)}</strong> (a name it gave itself) asks
to act as you on <code>${escapeHtml(request.resource)}</code>, with everything your account may do.</p>
<p>After you approve, you are sent back to <code>${escapeHtml(redirect.origin)}</code>.
Client id: <code>${escapeHtml(request.client.clientId)}</code>. Approving creates an API token named
<code>${escapeHtml(`MCP: ${request.client.clientName}`)}</code> in your account: revoke it to cut the application off.</p>
${generalError}
<form method="post" action="${escapeHtml(options.authorizeUrl)}">${hidden}
${who}
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
