/**
 * Lambda REQUEST authorizer of the Core API (issue 21): the API token in `Authorization`, or else
 * the session cookie. Invoked for every request (no result cache, no identity source:
 * cdk/constructs/core-api-definition.ts), so its answer is authoritative. Throwing "Unauthorized"
 * makes API Gateway answer 401.
 */
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from "aws-lambda";
import { authenticateRequest, requestHeader, stageWideArn } from "#lib/domain/authorizer.ts";

export async function handler(event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> {
  const caller = await authenticateRequest({
    authorization: requestHeader(event, "authorization"),
    cookie: requestHeader(event, "cookie"),
  });
  if (!caller) throw new Error("Unauthorized");
  return {
    principalId: caller.userId,
    policyDocument: {
      Version: "2012-10-17",
      Statement: [{ Action: "execute-api:Invoke", Effect: "Allow", Resource: stageWideArn(event.methodArn) }],
    },
    context: {
      userId: caller.userId,
      tokenId: caller.tokenId,
      rateLimitPerMinute: caller.rateLimitPerMinute,
      systemAdmin: caller.systemAdmin,
      authMethod: caller.authMethod,
      sessionId: caller.sessionId,
    },
  };
}
