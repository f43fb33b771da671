/**
 * How the admin CLI reports a failure: one line on stderr, exit code 1. Expected failures (unknown
 * user, duplicate e-mail, invalid input, missing configuration, unreachable endpoint) never show a
 * stack trace; an unexpected one shows it only with `--debug`.
 */
import { ZodError } from "zod";
import { HttpError } from "#lib/http/errors.ts";
import { DomainError } from "#lib/shared/errors.ts";

/** A failure the CLI itself detected, with a message meant for the operator. */
export class CliError extends Error {
  override readonly name = "CliError";
}

/** Error names of the AWS SDK that mean "the setup is wrong", not "the CLI is broken". */
const AWS_SETUP_ERRORS: Record<string, string> = {
  ResourceNotFoundException: "table not found (check TABLE_NAME and HOME_REGION, or use --local)",
  CredentialsProviderError: "no AWS credentials found (configure the AWS credential chain, or use --local)",
  UnrecognizedClientException: "AWS rejected the credentials",
  InvalidSignatureException: "AWS rejected the request signature (check the credentials)",
  ExpiredTokenException: "the AWS credentials have expired",
  AccessDeniedException: "access denied by AWS",
};

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

const CONNECTION_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "ECONNRESET", "EHOSTUNREACH", "ETIMEDOUT"]);

function connectionCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && CONNECTION_CODES.has(code)) return code;
    const errors = (current as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.length > 0) {
      current = errors[0];
      continue;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

export interface DescribedError {
  /** One line, without the `error: ` prefix. */
  message: string;
  expected: boolean;
}

export function describeError(error: unknown): DescribedError {
  if (error instanceof HttpError && error.expose) return { message: oneLine(error.message), expected: true };
  if (error instanceof CliError) return { message: oneLine(error.message), expected: true };
  // What the domain refuses (unknown id, invalid input, a rule) is the operator's to fix; only our
  // own store or service being unavailable is not.
  if (error instanceof DomainError && error.kind !== "unavailable") {
    const errors = Array.isArray(error.details.errors) ? `: ${error.details.errors.join("; ")}` : "";
    return { message: oneLine(`${error.message}${errors}`), expected: true };
  }
  if (error instanceof ZodError) {
    const problems = error.issues.map((i) =>
      i.path.length > 0 ? `${i.path.join(".")}: ${i.message}` : i.message,
    );
    return { message: oneLine(`invalid input: ${problems.join("; ")}`), expected: true };
  }
  if (error instanceof Error) {
    if (error.message.startsWith("Invalid configuration")) {
      return {
        message: oneLine(`${error.message} (set TABLE_NAME and HOME_REGION, or use --local)`),
        expected: true,
      };
    }
    const hint = AWS_SETUP_ERRORS[error.name];
    if (hint) return { message: oneLine(`${hint}: ${error.message}`), expected: true };
    const code = connectionCode(error);
    if (code) {
      const endpoint = process.env.AWS_ENDPOINT_URL;
      return {
        message: `cannot reach ${endpoint ?? "AWS"} (${code})${endpoint ? ": is the local stack running?" : ""}`,
        expected: true,
      };
    }
    return { message: oneLine(`${error.name}: ${error.message}`), expected: false };
  }
  return { message: oneLine(String(error)), expected: false };
}
