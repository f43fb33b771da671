/**
 * What went wrong, said by the domain; how to say it is the edge's decision (HTTP status and body
 * in lib/http/api-handler.ts, later MCP tool results and the CLI). The domain never names a status.
 */
export type ErrorKind =
  /** The input is wrong: the caller must change it. */
  | "validation"
  /** The caller may not do this. */
  | "forbidden"
  /** The thing does not exist (or is not the caller's to know about). */
  | "notFound"
  /** The state changed, or would break a rule, under the caller: retry or re-read. */
  | "conflict"
  /** A limit is reached (a quota, a rate): retry after `retryAfterSeconds` when given. */
  | "limit"
  /** An outside service the caller named answered badly; its message is for the caller. */
  | "upstream"
  /** An outside service the caller named did not answer in time; its message is for the caller. */
  | "upstreamTimeout"
  /** Our own store or service is unavailable: retry shortly. Nothing of it is shown. */
  | "unavailable"
  /**
   * Payment is required: the payment processor refused a charge (a declined card), or the
   * organisation's billing is suspended (`billing-suspended`). The payer must act.
   */
  | "paymentFailed";

export class DomainError extends Error {
  override name = "DomainError";
  readonly kind: ErrorKind;
  /** Extra fields of the answer's body (for example `fields` and `errors` of a validation failure). */
  readonly details: Record<string, unknown>;

  constructor(kind: ErrorKind, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.kind = kind;
    this.details = details;
  }
}

export const badRequest = (message: string, details?: Record<string, unknown>) =>
  new DomainError("validation", message, details);
export const forbidden = (message = "Forbidden", details?: Record<string, unknown>) =>
  new DomainError("forbidden", message, details);
export const notFound = (message: string) => new DomainError("notFound", message);
export const conflict = (message: string) => new DomainError("conflict", message);
export const limitReached = (message: string, retryAfterSeconds?: number) =>
  new DomainError("limit", message, retryAfterSeconds === undefined ? {} : { retryAfter: retryAfterSeconds });
export const upstreamFailed = (message: string) => new DomainError("upstream", message);
export const upstreamTimedOut = (message: string) => new DomainError("upstreamTimeout", message);
export const paymentFailed = (message: string) => new DomainError("paymentFailed", message);
export const serviceUnavailable = (message: string) => new DomainError("unavailable", message);

/** The canonical validation failure of the spec, naming each failing field. */
export const VALIDATION_MESSAGE = "Input failed data validation";
export function validationFailed(issues: { field: string; problem: string }[]): DomainError {
  return badRequest(VALIDATION_MESSAGE, {
    fields: [...new Set(issues.map((i) => i.field))],
    errors: issues.map((i) => `${i.field}: ${i.problem}`),
  });
}
