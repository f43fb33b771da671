/**
 * The data plane as a Lambda function URL handler (payload format 2.0): the event is turned into a
 * DataPlaneRequest and the answer into a buffered response (Lambda's buffered limit of 6 MB is
 * the spec's response limit). The local runner calls the same handler with the same event shape.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { createDataPlane } from "./engine.ts";

export function createFunctionUrlHandler(region: string) {
  const plane = createDataPlane(region);
  return async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
    // Null prototype: a header of any name (`__proto__`, `constructor`) is an own entry.
    const headers: Record<string, string> = Object.create(null);
    for (const [name, value] of Object.entries(event.headers ?? {})) {
      if (value !== undefined) headers[name.toLowerCase()] = value;
    }
    // Function URLs pass cookies separately.
    if (event.cookies?.length) headers.cookie = event.cookies.join("; ");
    const body = event.body ? Buffer.from(event.body, event.isBase64Encoded ? "base64" : "utf8") : undefined;
    const context = event.requestContext;
    const response = await plane.handle({
      method: context.http.method.toUpperCase(),
      path: event.rawPath,
      rawQuery: event.rawQueryString ?? "",
      headers,
      body,
      sourceIp: context.http.sourceIp,
      stage: context.stage ?? "$default",
      arnBase: `arn:aws:lambda:${region}:${context.accountId}:function-url/${context.apiId}`,
    });
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
