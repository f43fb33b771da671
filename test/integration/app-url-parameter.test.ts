/**
 * A deployment without `appUrl` gives its functions the name of the SSM parameter holding the
 * console's URL (APP_URL_PARAMETER, cdk/stacks/home-stack.ts shareConsoleUrl). The Core API's
 * handler reads it before its first request: a sign-up through the real auth handler, with no
 * APP_URL in the environment, e-mails a link to the parameter's URL. A missing parameter fails the
 * request (500, nothing sent) and is read again on the next one.
 */
import { DeleteParameterCommand, PutParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import type { APIGatewayProxyEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getConfig, resetConfig } from "#lib/config.ts";
import { provisionStack } from "#local/provision.ts";
import { sentEmails } from "../support/emulator.ts";

const parameterName = `/app-url-test-${Date.now()}/app-url`;
const consoleUrl = "https://d111111abcdef8.cloudfront.net";
const saved = { url: process.env.APP_URL, parameter: process.env.APP_URL_PARAMETER };
let ssm: SSMClient;

const signUp = (email: string): APIGatewayProxyEvent =>
  ({
    resource: "/auth/sign-up",
    path: "/auth/sign-up",
    httpMethod: "POST",
    headers: { Host: "abc123.execute-api.us-east-1.amazonaws.com", "Content-Type": "application/json" },
    multiValueHeaders: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    body: JSON.stringify({
      email,
      password: "correct horse battery staple",
      firstName: "Ada",
      lastName: "Url",
    }),
    isBase64Encoded: false,
    requestContext: {
      accountId: "000000000000",
      apiId: "abc123",
      protocol: "HTTP/1.1",
      httpMethod: "POST",
      identity: { sourceIp: "192.0.2.10", userAgent: "vitest" },
      path: "/v1/auth/sign-up",
      stage: "v1",
      requestId: `app-url-${Math.random()}`,
      requestTimeEpoch: Date.now(),
      resourceId: "signup",
      resourcePath: "/auth/sign-up",
    },
  }) as unknown as APIGatewayProxyEvent;

beforeAll(async () => {
  await provisionStack(getConfig());
  ssm = new SSMClient({ region: getConfig().homeRegion });
  delete process.env.APP_URL;
  process.env.APP_URL_PARAMETER = parameterName;
  resetConfig();
});
afterAll(async () => {
  await ssm.send(new DeleteParameterCommand({ Name: parameterName })).catch(() => undefined);
  for (const [name, value] of [
    ["APP_URL", saved.url],
    ["APP_URL_PARAMETER", saved.parameter],
  ] as const)
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  resetConfig();
});

describe("APP_URL from its parameter", () => {
  it("fails the request while the parameter is missing, and sends nothing", async () => {
    const { handler } = await import("../../functions/auth.ts");
    const email = `missing-${Date.now()}@app-url.example.test`;
    const answer = await handler(signUp(email), {} as never);
    expect(answer.statusCode).toBe(500);
    expect(answer.body).not.toMatch(/ParameterNotFound|ssm|stack/i);
    expect(await sentEmails(email)).toEqual([]);
  });

  it("reads it before the first request it can serve: the e-mailed link is on the console's URL", async () => {
    await ssm.send(new PutParameterCommand({ Name: parameterName, Value: consoleUrl, Type: "String" }));
    const { handler } = await import("../../functions/auth.ts");
    const email = `found-${Date.now()}@app-url.example.test`;
    const answer = await handler(signUp(email), {} as never);
    expect(answer.statusCode, answer.body).toBe(201);
    const [message] = await sentEmails(email);
    expect(message?.body).toContain(`${consoleUrl}/verify-email?email=${encodeURIComponent(email)}&code=`);
    expect(process.env.APP_URL).toBe(consoleUrl);
    expect(getConfig().appUrl).toBe(consoleUrl);
  });
});
