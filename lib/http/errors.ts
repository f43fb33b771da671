/**
 * Typed errors with an `expose` rule (as middy's http-error-handler): a 4xx message is meant for
 * the caller and is returned as `{message}`; anything else becomes a generic 500 body while the
 * details go to the log.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly expose: boolean;
  readonly body: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    message: string,
    options: { body?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = "HttpError";
    this.status = status;
    this.expose = status < 500;
    this.body = { message, ...options.body };
    this.headers = options.headers ?? {};
  }
}

export const badRequest = (message: string, body?: Record<string, unknown>) =>
  new HttpError(400, message, { body });
export const forbidden = (message = "Forbidden") => new HttpError(403, message);
export const notFound = (message: string) => new HttpError(404, message);
export const conflict = (message: string) => new HttpError(409, message);
export const methodNotAllowed = (message: string, allow: string[]) =>
  new HttpError(405, message, { headers: { Allow: allow.join(", ") } });
export const tooManyRequests = (retryAfterSeconds: number, limit: number) =>
  new HttpError(429, "Too many requests: rate limit exceeded", {
    body: { retryAfter: retryAfterSeconds },
    headers: {
      "Retry-After": String(retryAfterSeconds),
      "X-RateLimit-Limit": String(limit),
      "X-RateLimit-Remaining": "0",
    },
  });
export const serviceUnavailable = (message: string) => new HttpError(503, message);
export const badGateway = (message: string) => new HttpError(502, message);

/** The canonical validation failure of the spec, naming each failing field. */
export const VALIDATION_MESSAGE = "Input failed data validation";
export function validationFailed(issues: { field: string; problem: string }[]): HttpError {
  return badRequest(VALIDATION_MESSAGE, {
    fields: [...new Set(issues.map((i) => i.field))],
    errors: issues.map((i) => `${i.field}: ${i.problem}`),
  });
}
