/**
 * The HTTP edge of errors. The domain throws DomainErrors that say what went wrong
 * (lib/shared/errors.ts); here each kind becomes a status. HttpError remains for what only HTTP
 * has (405 with Allow, the API's own 429 with rate headers, 401 from the authorizer context).
 *
 * Exposure rule (as middy's http-error-handler): 4xx messages are for the caller; a 5xx body is
 * a generic message with the request id, except `upstream` / `upstreamTimeout` answers, which
 * report what a service the caller named did (the credential test's 502 and 504).
 */
import type { DomainError, ErrorKind } from "#lib/shared/errors.ts";

export {
  badRequest,
  conflict,
  DomainError,
  forbidden,
  notFound,
  serviceUnavailable,
  VALIDATION_MESSAGE,
  validationFailed,
} from "#lib/shared/errors.ts";

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

/** The status of each kind of domain error. */
export const STATUS_OF_KIND: Readonly<Record<ErrorKind, number>> = {
  validation: 400,
  forbidden: 403,
  notFound: 404,
  conflict: 409,
  limit: 429,
  upstream: 502,
  upstreamTimeout: 504,
  unavailable: 503,
  paymentFailed: 402,
};

/** Kinds whose message is shown although the status is 5xx: what the caller's own upstream said. */
const EXPOSED_5XX: ReadonlySet<ErrorKind> = new Set(["upstream", "upstreamTimeout"]);

/** A domain error as the HttpError the edge answers with (exposed or not). */
export function httpErrorOf(error: DomainError): HttpError {
  const status = STATUS_OF_KIND[error.kind];
  const retryAfter = error.details.retryAfter;
  const headers = typeof retryAfter === "number" ? { "Retry-After": String(retryAfter) } : undefined;
  const http = new HttpError(status, error.message, { body: error.details, headers });
  return EXPOSED_5XX.has(error.kind) ? Object.assign(http, { expose: true }) : http;
}

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
