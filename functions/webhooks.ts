/**
 * Public webhooks (spec 6.2): the OAuth2 provider's redirect back to `{base_url}/webhooks/oauth2`.
 * No user token comes with it; the single-use, expiring `state` is what authenticates it.
 */
import middy from "@middy/core";
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from "aws-lambda";
import { toApiCredential } from "#lib/domain/credentials.ts";
import { completeAuthorization } from "#lib/domain/oauth2-flow.ts";
import { errorResponses, json } from "#lib/http/api-handler.ts";

export const handler = middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
  .use(errorResponses())
  .handler(async (event) => {
    const query = event.queryStringParameters ?? {};
    const credential = await completeAuthorization({
      state: query.state,
      code: query.code,
      error: query.error,
      error_description: query.error_description,
    });
    return json(200, {
      message: "Authorization complete: the credential is ready to use",
      credentials: [toApiCredential(credential)],
    });
  });
