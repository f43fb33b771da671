/**
 * Public webhooks (spec 6.2): the OAuth2 provider's redirect back to `{base_url}/webhooks/oauth2`.
 * No user token comes with it; the single-use, expiring `state` is what authenticates it.
 */
import middy from "@middy/core";
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from "aws-lambda";
import { toApiCredential } from "#lib/domain/credentials.ts";
import { completeAuthorization } from "#lib/domain/oauth2-flow.ts";
import { json } from "#lib/http/api-handler.ts";
import { HttpError } from "#lib/http/errors.ts";
import { describeError, log } from "#lib/log.ts";

export const handler = middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
  .onError(async (request) => {
    const error = request.error;
    if (error instanceof HttpError && error.expose) {
      request.response = json(error.status, error.body);
      return;
    }
    log.error("OAuth2 callback failed", describeError(error));
    request.response = json(error instanceof HttpError ? error.status : 500, {
      message: error instanceof HttpError ? error.message : "Internal server error",
    });
  })
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
