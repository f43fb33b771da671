/** Lambda TOKEN authorizer of the Core API. Throwing "Unauthorized" makes API Gateway answer 401. */
import type { APIGatewayAuthorizerResult, APIGatewayTokenAuthorizerEvent } from "aws-lambda";
import { authenticate, stageWideArn } from "#lib/domain/authorizer.ts";

export async function handler(event: APIGatewayTokenAuthorizerEvent): Promise<APIGatewayAuthorizerResult> {
  const caller = await authenticate(event.authorizationToken);
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
    },
  };
}
