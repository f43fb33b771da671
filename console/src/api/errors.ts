/** API errors as the pages show them: by field when the message names one, a 429 with its wait. */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Messages by field name, from the API's `"<field>: ..."` messages. */
    readonly fields: Record<string, string>,
    /** Seconds to wait, for a 429. */
    readonly retryAfter?: number,
    /** The answer's body as sent (fields beyond `message`, such as a 409's date). */
    readonly body?: unknown,
  ) {
    super(message);
  }
}

const FIELD_MESSAGE = /^([A-Za-z][\w.]*): (.+)$/;

/** The error of an answer that is not a success. */
export function apiError(response: Response, body: unknown): ApiError {
  const message =
    typeof body === "object" && body && "message" in body && typeof body.message === "string"
      ? body.message
      : `The request failed (${response.status})`;
  const fields: Record<string, string> = {};
  // A validation error lists its problems in `errors` ("<field>: ..."); other errors name one in `message`.
  const errors =
    typeof body === "object" && body && "errors" in body && Array.isArray(body.errors)
      ? body.errors.filter((item): item is string => typeof item === "string")
      : [];
  for (const part of [...errors, ...message.split(/;\s+/)]) {
    const match = FIELD_MESSAGE.exec(part.trim());
    if (match?.[1] && match[2]) fields[match[1].split(".").at(-1) ?? match[1]] = match[2];
  }
  let retryAfter: number | undefined;
  if (response.status === 429) {
    const header = Number(response.headers.get("retry-after"));
    const inBody =
      typeof body === "object" && body && "retryAfter" in body ? Number(body.retryAfter) : Number.NaN;
    retryAfter =
      Number.isFinite(header) && header > 0 ? header : Number.isFinite(inBody) ? inBody : undefined;
  }
  return new ApiError(response.status, message, fields, retryAfter, body);
}

/** The data of an openapi-fetch answer, or its error thrown (a 401 sends the page to Sign-in). */
export function must<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.response.ok && result.data !== undefined) return result.data;
  const error = apiError(result.response, result.error);
  if (error.status === 401) onUnauthorized(error);
  throw error;
}

let unauthorizedHandler: (error: ApiError) => void = () => {};
export function setUnauthorizedHandler(handler: (error: ApiError) => void): void {
  unauthorizedHandler = handler;
}
function onUnauthorized(error: ApiError): void {
  unauthorizedHandler(error);
}

/** The message to show for an error, with the wait of a 429. */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 429 && error.retryAfter !== undefined)
      return `${error.message}. Try again in ${formatWait(error.retryAfter)}.`;
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

export function formatWait(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? "" : "s"}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}
