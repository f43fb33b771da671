/**
 * The Core API as the OpenAPI 3.0 document API Gateway imports (the `Body` of the
 * AWS::ApiGateway::RestApi, cdk/stacks/home-stack.ts): every route of CORE_API_ROUTES (derived from
 * the operation registry) with its path parameters, its Lambda proxy integration, and the REQUEST
 * authorizer on every route that is not public; the request validator and the gateway responses
 * at the root.
 *
 * The authorizer (issue 21) has no result cache (`authorizerResultTtlInSeconds: 0`) and no
 * identity source. A REQUEST authorizer's identity sources are its cache key, and API Gateway
 * answers 401 without invoking it when one of them is missing from the request; they are optional
 * when caching is disabled ("When the authorization caching is not enabled, this property is
 * optional": identitySource in https://docs.aws.amazon.com/apigateway/latest/api/API_Authorizer.html).
 * So API Gateway invokes the authorizer for every request, one with only a session cookie (no
 * `Authorization`) included, and its answer is never a stale cached one: a revoked token or
 * session is a 401 on its next request (lib/domain/authorizer.ts).
 *
 * Declared in the body, methods, resources, the authorizer, the validator and the gateway
 * responses cost no CloudFormation resource: adding an operation adds none. The body is imported
 * in OVERWRITE mode, so it must hold the whole API: anything defined beside it (an
 * AWS::ApiGateway::Authorizer, GatewayResponse or RequestValidator) would be deleted by the next
 * import.
 *
 * This is not the published document of lib/api/openapi.ts (OpenAPI 3.1, with every schema): API
 * Gateway imports OpenAPI 3.0, and request body schemas would make API Gateway validate bodies
 * itself, before the handlers' zod validation and with other error messages.
 */

import type { FunctionGroupName, RouteDefinition } from "#lib/infra/api-manifest.ts";
import { SERVICE_UNAVAILABLE_MESSAGE, UNAUTHORIZED_MESSAGE } from "#lib/infra/api-manifest.ts";

type Json = Record<string, unknown>;

/** The request validator every method uses (path parameters present, body as declared). */
export const REQUEST_VALIDATOR = "parameters-and-body";

/**
 * JSON errors everywhere; an unknown route is a 404, not API Gateway's 403 "Missing
 * Authentication Token". An authorizer that throws (its store stalled past the SDK's bounded
 * retries) is a 503 the caller may retry, as the handlers answer the same failure. A 401 says how
 * the token is sent (the raw user token, without `Bearer`) or that a session cookie works too: the
 * authorizer cannot shape it per request, so one message, the local runner's too.
 */
export const GATEWAY_RESPONSES: Readonly<Record<string, { statusCode?: string; body: string }>> = {
  DEFAULT_4XX: { body: '{"message":$context.error.messageString}' },
  DEFAULT_5XX: { body: '{"message":$context.error.messageString}' },
  AUTHORIZER_FAILURE: { statusCode: "503", body: JSON.stringify({ message: SERVICE_UNAVAILABLE_MESSAGE }) },
  AUTHORIZER_CONFIGURATION_ERROR: {
    statusCode: "503",
    body: JSON.stringify({ message: SERVICE_UNAVAILABLE_MESSAGE }),
  },
  UNAUTHORIZED: { statusCode: "401", body: JSON.stringify({ message: UNAUTHORIZED_MESSAGE }) },
  MISSING_AUTHENTICATION_TOKEN: { statusCode: "404", body: '{"message":"Route not found"}' },
};

export interface CoreApiDefinitionProps {
  readonly title: string;
  readonly description: string;
  readonly routes: readonly RouteDefinition[];
  /** `arn:<partition>:apigateway:<region>:lambda:path/2015-03-31/functions/<function ARN>/invocations` of a group. */
  readonly integrationUri: (group: FunctionGroupName) => string;
  readonly authorizer: {
    /** The authorizer's name in API Gateway (the security scheme's name). */
    readonly name: string;
    /** The authorizer function's invocation URI (as integrationUri). */
    readonly uri: string;
  };
}

const pathParameters = (path: string): string[] =>
  [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1] as string);

/** The OpenAPI 3.0 document of the Core API, with API Gateway's extensions. */
export function coreApiDefinition(props: CoreApiDefinitionProps): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of props.routes) {
    const parameters = pathParameters(route.path).map((name) => ({
      name,
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    paths[route.path] = {
      ...paths[route.path],
      [route.method.toLowerCase()]: {
        ...(parameters.length ? { parameters } : {}),
        ...(route.public ? {} : { security: [{ [props.authorizer.name]: [] }] }),
        // Lambda proxy integration: the function shapes the whole answer.
        responses: {},
        "x-amazon-apigateway-integration": {
          type: "aws_proxy",
          httpMethod: "POST",
          uri: props.integrationUri(route.group),
          passthroughBehavior: "when_no_match",
        },
      },
    };
  }
  return {
    openapi: "3.0.1",
    info: { title: props.title, description: props.description, version: "1" },
    paths,
    components: {
      securitySchemes: {
        // `name`/`in` are OpenAPI's required fields of an apiKey scheme; API Gateway reads the
        // identity sources of a REQUEST authorizer from `identitySource` only, declared nowhere
        // here (see the header comment): the authorizer reads `Authorization` and `Cookie` itself.
        [props.authorizer.name]: {
          type: "apiKey",
          name: "Authorization",
          in: "header",
          "x-amazon-apigateway-authtype": "custom",
          "x-amazon-apigateway-authorizer": {
            type: "request",
            authorizerUri: props.authorizer.uri,
            authorizerResultTtlInSeconds: 0,
          },
        },
      },
    },
    "x-amazon-apigateway-request-validators": {
      [REQUEST_VALIDATOR]: { validateRequestParameters: true, validateRequestBody: true },
    },
    "x-amazon-apigateway-request-validator": REQUEST_VALIDATOR,
    "x-amazon-apigateway-gateway-responses": Object.fromEntries(
      Object.entries(GATEWAY_RESPONSES).map(([type, response]) => [
        type,
        {
          ...(response.statusCode ? { statusCode: response.statusCode } : {}),
          responseTemplates: { "application/json": response.body },
        },
      ]),
    ),
  };
}
