/**
 * A local stand-in for API Gateway's REST API: turns each HTTP request into the Lambda proxy event
 * API Gateway would send, runs the REQUEST authorizer first on every route that is not public (for
 * every request: the deployed authorizer has no result cache and no identity source, so API
 * Gateway invokes it for each request, with or without an `Authorization` header), then the
 * route's handler, and turns the result back into the HTTP response. Routes come from the same manifest the CDK stack builds the API from.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayProxyResult,
  APIGatewayProxyStructuredResultV2,
  APIGatewayRequestAuthorizerEvent,
  Context,
} from "aws-lambda";
import {
  type RouteDefinition,
  SERVICE_UNAVAILABLE_MESSAGE,
  UNAUTHORIZED_MESSAGE,
} from "#lib/infra/api-manifest.ts";

export type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
export type RequestAuthorizer = (
  event: APIGatewayRequestAuthorizerEvent,
) => Promise<APIGatewayAuthorizerResult>;

export type FunctionUrlHandler = (
  event: APIGatewayProxyEventV2,
) => Promise<APIGatewayProxyStructuredResultV2>;

/**
 * A Lambda behind a function URL served on the same port (the MCP endpoint: spec 4.15 puts it at
 * `{base_url}/mcp`): requests whose path `matches` skip the REST API and its authorizer.
 */
export interface FunctionUrlRoute {
  matches(path: string): boolean;
  loadHandler(): Promise<FunctionUrlHandler>;
}

export interface RestApiOptions {
  routes: readonly RouteDefinition[];
  /** Loads the handler of a function group (lazily, like a cold start). */
  loadHandler: (group: string) => Promise<ProxyHandler>;
  authorizer: RequestAuthorizer;
  stage?: string;
  region?: string;
  /** API Gateway's payload limit. */
  maxBodyBytes?: number;
  functionUrls?: readonly FunctionUrlRoute[];
  /** Answers a request no route matches (the web console's files); false leaves it the API's 404. */
  fallback?: (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean>;
  /**
   * Told of each answered request to a Core API route that changes something (any method but GET,
   * HEAD and OPTIONS): `npm start` prints one line per such request (docs/local-runner.md).
   */
  onChange?: (change: RouteChange) => void;
}

/** A request to a route that changes something, once answered: the route's template, never its ids. */
export interface RouteChange {
  method: string;
  /** The route's resource path with its `{param}` placeholders (ids and session ids stay out). */
  resource: string;
  status: number;
  ms: number;
}

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

interface CompiledRoute extends RouteDefinition {
  pattern: RegExp;
  paramNames: string[];
}

function compile(route: RouteDefinition): CompiledRoute {
  const paramNames: string[] = [];
  const source = route.path
    .split("/")
    .map((segment) => {
      const param = /^\{(.+)\}$/.exec(segment);
      if (!param?.[1]) return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      paramNames.push(param[1]);
      return "([^/]+)";
    })
    .join("/");
  return { ...route, pattern: new RegExp(`^${source}/?$`), paramNames };
}

/**
 * The request target split into its raw path and raw query. API Gateway matches routes on the path
 * as sent: no dot-segment normalisation (`/proxies/%2e%2e` and `/proxies/..` are the proxy id `..`,
 * never the parent resource) and no decoding (path parameters reach the handler still
 * percent-encoded; lib/http/request.ts decodes them).
 */
export function splitTarget(target: string): { path: string; query: string } {
  const withoutFragment = target.split("#", 1)[0] ?? "";
  const mark = withoutFragment.indexOf("?");
  return mark === -1
    ? { path: withoutFragment, query: "" }
    : { path: withoutFragment.slice(0, mark), query: withoutFragment.slice(mark + 1) };
}

/**
 * The single-value map (last value wins) and the multi-value map of name/value pairs, as API
 * Gateway builds them. Built from Maps so that every name, `constructor` and `__proto__` included,
 * is an own data property (as in the JSON API Gateway sends) and never reads the prototype.
 */
export function valueMaps(pairs: Iterable<[string, string]>): {
  single: Record<string, string>;
  multi: Record<string, string[]>;
} {
  const single = new Map<string, string>();
  const multi = new Map<string, string[]>();
  for (const [name, value] of pairs) {
    single.set(name, value);
    const values = multi.get(name);
    if (values) values.push(value);
    else multi.set(name, [value]);
  }
  return { single: Object.fromEntries(single), multi: Object.fromEntries(multi) };
}

const JSON_TYPE = { "Content-Type": "application/json" };

/**
 * The function URL event (payload 2.0) AWS would send for a request: the path as sent, headers
 * from rawHeaders into a null-prototype map (Node's req.headers drops a header named `__proto__`,
 * and `{}` would turn it into a prototype), cookies apart, the body in base64.
 */
export function functionUrlEvent(req: IncomingMessage, body: Buffer, apiId: string): APIGatewayProxyEventV2 {
  const { path: rawPath, query: rawQuery } = splitTarget(req.url ?? "/");
  const headers: Record<string, string> = Object.create(null);
  const cookies: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = (req.rawHeaders[i] as string).toLowerCase();
    const value = req.rawHeaders[i + 1] as string;
    if (name === "cookie") cookies.push(...value.split(/;\s*/));
    else headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
  }
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath,
    rawQueryString: rawQuery,
    cookies: cookies.length ? cookies : undefined,
    headers,
    body: body.length ? body.toString("base64") : undefined,
    isBase64Encoded: body.length > 0,
    requestContext: {
      accountId: "000000000000",
      apiId,
      domainName: headers.host ?? "127.0.0.1",
      domainPrefix: "local",
      http: {
        method: req.method ?? "GET",
        path: rawPath,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress?.replace(/^::ffff:/, "") ?? "127.0.0.1",
        userAgent: headers["user-agent"] ?? "",
      },
      requestId: randomUUID(),
      routeKey: "$default",
      stage: "$default",
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
    },
  } as APIGatewayProxyEventV2;
}

/** A function URL's buffered result written as the HTTP response. */
function sendFunctionUrlResult(res: ServerResponse, result: APIGatewayProxyStructuredResultV2) {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  if (result.cookies?.length) headers["set-cookie"] = result.cookies;
  res.writeHead(result.statusCode ?? 200, headers);
  const body = result.body ?? "";
  res.end(result.isBase64Encoded ? Buffer.from(body, "base64") : body);
}

function send(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string | string[]> = {},
) {
  res.writeHead(status, headers);
  res.end(body);
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer | "too-large"> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on("end", () => resolve(size > limit ? "too-large" : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function lambdaContext(functionName: string, requestId: string): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: "256",
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: "local",
    getRemainingTimeInMillis: () => 29_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

const isTextual = (contentType: string | undefined) =>
  !contentType || /json|text|xml|x-www-form-urlencoded|javascript/i.test(contentType);

export function createRestApi(options: RestApiOptions) {
  const routes = options.routes.map(compile);
  const stage = options.stage ?? "local";
  const region = options.region ?? "us-east-1";

  /** The authorizer's answer, or "deny" (it threw "Unauthorized" or did not allow). */
  async function authorize(
    event: APIGatewayRequestAuthorizerEvent,
  ): Promise<APIGatewayAuthorizerResult | "deny"> {
    try {
      const result = await options.authorizer(event);
      return result.policyDocument.Statement.some((s) => s.Effect === "Allow") ? result : "deny";
    } catch (error) {
      if (error instanceof Error && error.message === "Unauthorized") return "deny";
      throw error;
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { path, query: rawQuery } = splitTarget(req.url ?? "/");
    const functionUrl = options.functionUrls?.find((route) => route.matches(path));
    if (functionUrl) {
      const raw = await readBody(req, options.maxBodyBytes ?? 6 * 1024 * 1024);
      if (raw === "too-large")
        return send(res, 413, JSON.stringify({ message: "Request Entity Too Large" }), JSON_TYPE);
      const handler = await functionUrl.loadHandler();
      return sendFunctionUrlResult(res, await handler(functionUrlEvent(req, raw, `local-${region}`)));
    }
    const method = (req.method ?? "GET").toUpperCase();
    const match = routes
      .filter((r) => r.method === method)
      .map((r) => ({ route: r, found: r.pattern.exec(path) }))
      .find((m) => m.found);
    if (!match?.found) {
      if (await options.fallback?.(req, res, path)) return;
      return send(res, 404, JSON.stringify({ message: "Route not found" }), JSON_TYPE);
    }
    const { route, found } = match;
    const onChange = options.onChange;
    if (onChange && !READ_METHODS.has(method)) {
      const started = performance.now();
      res.once("finish", () =>
        onChange({
          method,
          resource: route.path,
          status: res.statusCode,
          ms: Math.round(performance.now() - started),
        }),
      );
    }
    const requestId = randomUUID();
    const methodArn = `arn:aws:execute-api:${region}:000000000000:local/${stage}/${method}${route.path}`;

    const headerPairs: [string, string][] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2)
      headerPairs.push([req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string]);
    const { single: headers, multi: multiValueHeaders } = valueMaps(headerPairs);
    const { single: query, multi: multiQuery } = valueMaps(new URLSearchParams(rawQuery));
    const pathParameters = Object.fromEntries(
      route.paramNames.map((name, i) => [name, found[i + 1] as string]),
    );
    const requestContext = {
      accountId: "000000000000",
      apiId: "local",
      domainName: req.headers.host ?? "127.0.0.1",
      protocol: `HTTP/${req.httpVersion}`,
      httpMethod: method,
      identity: {
        sourceIp: req.socket.remoteAddress ?? "127.0.0.1",
        userAgent: req.headers["user-agent"] ?? null,
      } as APIGatewayProxyEvent["requestContext"]["identity"],
      path: `/${stage}${path}`,
      stage,
      requestId,
      requestTimeEpoch: Date.now(),
      resourceId: route.path,
      resourcePath: route.path,
    };

    let decision: APIGatewayAuthorizerResult | "deny" = {
      principalId: "anonymous",
      policyDocument: { Version: "2012-10-17", Statement: [] },
    };
    if (!route.public) {
      try {
        decision = await authorize({
          type: "REQUEST",
          methodArn,
          resource: route.path,
          path,
          httpMethod: method,
          headers,
          multiValueHeaders,
          pathParameters: Object.keys(pathParameters).length ? pathParameters : null,
          queryStringParameters: Object.keys(query).length ? query : null,
          multiValueQueryStringParameters: Object.keys(multiQuery).length ? multiQuery : null,
          stageVariables: null,
          requestContext: requestContext as APIGatewayRequestAuthorizerEvent["requestContext"],
        });
      } catch (error) {
        // An authorizer that fails (its store stalled, say) is a 503, as the deployed API's
        // AUTHORIZER_FAILURE / AUTHORIZER_CONFIGURATION_ERROR gateway responses answer it.
        process.stderr.write(
          `local authorizer error: ${error instanceof Error ? error.message : String(error)}\n`,
        );
        return send(res, 503, JSON.stringify({ message: SERVICE_UNAVAILABLE_MESSAGE }), JSON_TYPE);
      }
      if (decision === "deny")
        return send(res, 401, JSON.stringify({ message: UNAUTHORIZED_MESSAGE }), JSON_TYPE);
    }

    const raw = await readBody(req, options.maxBodyBytes ?? 10 * 1024 * 1024);
    if (raw === "too-large") {
      return send(res, 413, JSON.stringify({ message: "Request Entity Too Large" }), JSON_TYPE);
    }
    const textual = isTextual(req.headers["content-type"]);
    // API Gateway passes authorizer context values to the integration as strings.
    const authorizerContext = Object.fromEntries(
      Object.entries(decision.context ?? {}).map(([k, v]) => [k, String(v)]),
    );
    const event: APIGatewayProxyEvent = {
      resource: route.path,
      path,
      httpMethod: method,
      headers,
      multiValueHeaders,
      queryStringParameters: Object.keys(query).length ? query : null,
      multiValueQueryStringParameters: Object.keys(multiQuery).length ? multiQuery : null,
      pathParameters: Object.keys(pathParameters).length ? pathParameters : null,
      stageVariables: null,
      body: raw.length === 0 ? null : textual ? raw.toString("utf8") : raw.toString("base64"),
      isBase64Encoded: raw.length > 0 && !textual,
      requestContext: {
        ...requestContext,
        authorizer: route.public ? null : { principalId: decision.principalId, ...authorizerContext },
      },
    };
    const handler = await options.loadHandler(route.group);
    const result = await handler(event, lambdaContext(route.group, requestId));
    const responseHeaders: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(result.headers ?? {})) responseHeaders[k] = String(v);
    for (const [k, v] of Object.entries(result.multiValueHeaders ?? {})) responseHeaders[k] = v.map(String);
    responseHeaders["x-amzn-RequestId"] = requestId;
    const body = result.isBase64Encoded ? Buffer.from(result.body, "base64") : result.body;
    res.writeHead(result.statusCode, responseHeaders);
    res.end(body);
  }

  return {
    handle,
    /** Serves the API; `inFlight` holds the requests being handled (a stop lets them finish). */
    listen(
      port: number,
      host = "127.0.0.1",
    ): Promise<{ server: Server; url: string; inFlight: ReadonlySet<Promise<void>> }> {
      const inFlight = new Set<Promise<void>>();
      const server = createServer((req, res) => {
        const handled = handle(req, res)
          .catch((error: unknown) => {
            process.stderr.write(
              `local API gateway error: ${error instanceof Error ? error.stack : String(error)}\n`,
            );
            if (!res.headersSent)
              send(res, 500, JSON.stringify({ message: "Internal server error" }), JSON_TYPE);
            else res.end();
          })
          .finally(() => inFlight.delete(handled));
        inFlight.add(handled);
      });
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          const { port: actual } = server.address() as AddressInfo;
          resolve({ server, url: `http://${host}:${actual}`, inFlight });
        });
      });
    },
  };
}
