/**
 * The sample events of events/ stay usable: each runs through its real handler against the
 * emulator (this file's own tables) and gets the answer its placeholders call for.
 */
import { readFile } from "node:fs/promises";
import type {
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayRequestAuthorizerEvent,
} from "aws-lambda";
import { beforeAll, describe, expect, it } from "vitest";
import { getConfig } from "#lib/config.ts";
import { createFunctionUrlHandler } from "#lib/data-plane/function-url.ts";
import { issueToken } from "#lib/domain/tokens.ts";
import { createUser } from "#lib/domain/users.ts";
import { provisionStack } from "#local/provision.ts";
import { handler as authorizer } from "../../functions/authorizer.ts";
import { handler as users } from "../../functions/users.ts";

const sample = async <T>(name: string) =>
  JSON.parse(await readFile(new URL(`../../events/${name}`, import.meta.url), "utf8")) as T;

beforeAll(async () => {
  await provisionStack(getConfig());
});

describe("events/", () => {
  it("authorizer-request.json: refused as it is, allowed with a real token", async () => {
    const event = await sample<APIGatewayRequestAuthorizerEvent>("authorizer-request.json");
    await expect(authorizer(event)).rejects.toThrow("Unauthorized");
    const user = await createUser({
      email: `events-${Date.now()}@example.test`,
      firstName: "Eve",
      lastName: "Nt",
    });
    const { token } = await issueToken(String(user.userId));
    const allowed = await authorizer({
      ...event,
      headers: { ...event.headers, Authorization: token },
      multiValueHeaders: { ...event.multiValueHeaders, Authorization: [token] },
    });
    expect(allowed.principalId).toBe(user.userId);
    expect(allowed.context).toMatchObject({ userId: user.userId, authMethod: "token", sessionId: "" });
    expect(allowed.policyDocument.Statement[0]).toMatchObject({ Effect: "Allow" });
  });

  it("users-get.json: the users handler answers for the user in the authorizer context", async () => {
    const event = await sample<APIGatewayProxyEvent>("users-get.json");
    const user = await createUser({
      email: `events-u-${Date.now()}@example.test`,
      firstName: "Ursula",
      lastName: "Ser",
    });
    const userId = String(user.userId);
    // The handler trusts the authorizer's context (the authorizer runs for every request).
    const { token, tokenId } = await issueToken(userId);
    const authorizerContext = {
      ...(event.requestContext.authorizer as object),
      principalId: userId,
      userId,
      tokenId,
    };
    const result = await users(
      {
        ...event,
        headers: { ...event.headers, Authorization: token },
        requestContext: { ...event.requestContext, authorizer: authorizerContext },
      },
      {} as never,
    );
    expect(result.statusCode).toBe(200);
    expect(JSON.parse(result.body).users[0].userId).toBe(userId);
  });

  it("data-plane-get.json: an unknown proxy answers 403 with the service headers", async () => {
    const event = await sample<APIGatewayProxyEventV2>("data-plane-get.json");
    const result = await createFunctionUrlHandler("us-east-1")(event);
    expect(result.statusCode).toBe(403);
    expect(result.headers?.["service-proxy-code"]).toBe("proxy-access-denied");
  });
});
