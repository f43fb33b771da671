/**
 * The data plane as a Lambda function URL handler (payload format 2.0), in the two invoke modes:
 *
 * - RESPONSE_STREAM (deployed): the answer is written to the response stream and the stream is
 *   ended; only then are the request log and the meters' settlement written. The caller's wait
 *   holds the decision and the target call, not the log write (the pattern of AWS's "Running code
 *   after returning a response from an AWS Lambda function", option "response streaming").
 * - BUFFERED: the answer is returned after the log is written (kept for direct invocations).
 *
 * The local runner calls the streaming handler with the same event and a response stream of its
 * own (local/runner.ts), so the local order of events is the deployed one.
 */
import type { Writable } from "node:stream";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import type { DataPlaneRequest } from "./context.ts";
import { createDataPlane } from "./pipeline.ts";

export function requestOf(event: APIGatewayProxyEventV2, region: string): DataPlaneRequest {
  // Null prototype: a header of any name (`__proto__`, `constructor`) is an own entry.
  const headers: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  // Function URLs pass cookies separately.
  if (event.cookies?.length) headers.cookie = event.cookies.join("; ");
  const body = event.body ? Buffer.from(event.body, event.isBase64Encoded ? "base64" : "utf8") : undefined;
  const context = event.requestContext;
  return {
    method: context.http.method.toUpperCase(),
    path: event.rawPath,
    rawQuery: event.rawQueryString ?? "",
    headers,
    body,
    sourceIp: context.http.sourceIp,
    stage: context.stage ?? "$default",
    arnBase: `arn:aws:lambda:${region}:${context.accountId}:function-url/${context.apiId}`,
  };
}

/** A buffered function URL handler: answers once the request log is written. */
export function createFunctionUrlHandler(region: string) {
  const plane = createDataPlane(region);
  return async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
    const response = await plane.handle(requestOf(event, region));
    return {
      statusCode: response.status,
      headers: response.headers,
      // One Set-Cookie each (joined into one header they would be unreadable).
      ...(response.cookies?.length ? { cookies: response.cookies } : {}),
      body: response.body.toString("base64"),
      isBase64Encoded: true,
    };
  };
}

/** The metadata prelude of a streamed function URL response. */
export interface StreamMetadata {
  statusCode: number;
  headers: Record<string, string>;
  cookies?: string[];
}

/** `awslambda.HttpResponseStream.from` in Lambda; the local runner passes its own. */
export type WithMetadata = (stream: Writable, metadata: StreamMetadata) => Writable;

const ended = (stream: Writable) =>
  new Promise<void>((resolve) => {
    if (stream.writableFinished) return resolve();
    stream.once("finish", () => resolve());
    stream.once("error", () => resolve());
    stream.once("close", () => resolve());
  });

/**
 * A streaming function URL handler (to be wrapped by `awslambda.streamifyResponse`): the answer is
 * written and the stream ended before the log and settlement are written.
 */
export function createStreamingHandler(region: string, withMetadata: WithMetadata) {
  const plane = createDataPlane(region);
  return async (event: APIGatewayProxyEventV2, responseStream: Writable): Promise<void> => {
    const served = await plane.serve(requestOf(event, region));
    const { response } = served;
    const stream = withMetadata(responseStream, {
      statusCode: response.status,
      headers: response.headers,
      ...(response.cookies?.length ? { cookies: response.cookies } : {}),
    });
    stream.end(event.requestContext.http.method.toUpperCase() === "HEAD" ? undefined : response.body);
    await ended(stream);
    await served.finish();
  };
}
