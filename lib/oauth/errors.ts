/**
 * The OAuth error answers (RFC 6749 5.2 and 4.1.2.1, RFC 7591 3.2.2, RFC 8707): an error code
 * from the RFCs and a description for the developer. The edge (lib/oauth/http.ts) decides whether
 * it becomes a JSON 400/401, a redirect to the client, or an error page.
 */
export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "unsupported_response_type"
  | "access_denied"
  | "invalid_target"
  | "invalid_redirect_uri"
  | "invalid_client_metadata"
  | "temporarily_unavailable";

/** An answer other than the code's usual 400/401: a limit (429 or 503) and when to try again. */
export interface OAuthErrorAnswer {
  status?: 429 | 503;
  retryAfterSeconds?: number;
}

export class OAuthError extends Error {
  override name = "OAuthError";
  readonly code: OAuthErrorCode;
  readonly answer: OAuthErrorAnswer;

  constructor(code: OAuthErrorCode, description: string, answer: OAuthErrorAnswer = {}) {
    super(description);
    this.code = code;
    this.answer = answer;
  }

  /** The JSON body of the token and registration endpoints. */
  toJSON() {
    return { error: this.code, error_description: this.message };
  }
}

export const oauthError = (code: OAuthErrorCode, description: string, answer?: OAuthErrorAnswer) =>
  new OAuthError(code, description, answer);
