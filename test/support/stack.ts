/**
 * End-to-end support: the real local stack (this file's tables in the shared emulator, the local
 * API Gateway, the real handlers) and a small HTTP client for it.
 */

import { expect } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { GetCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import type { Key } from "#lib/db/keys.ts";
import { issueToken } from "#lib/domain/tokens.ts";
import { createUser } from "#lib/domain/users.ts";
import type { ClientRole } from "#lib/shared/roles.ts";
import { type LocalStack, type LocalStackOptions, startLocalStack } from "#local/runner.ts";
import { watchConfigWrites } from "./config-atomicity.ts";

let counter = 0;

export interface ApiResult<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
}

export interface ApiClient {
  request<T = Record<string, any>>(method: string, path: string, body?: unknown): Promise<ApiResult<T>>;
  get<T = Record<string, any>>(path: string): Promise<ApiResult<T>>;
  post<T = Record<string, any>>(path: string, body?: unknown): Promise<ApiResult<T>>;
  put<T = Record<string, any>>(path: string, body?: unknown): Promise<ApiResult<T>>;
  delete<T = Record<string, any>>(path: string, body?: unknown): Promise<ApiResult<T>>;
}

export function apiClient(baseUrl: string, token?: string): ApiClient {
  const request = async <T>(method: string, path: string, body?: unknown): Promise<ApiResult<T>> => {
    const headers: Record<string, string> = {};
    if (token) headers.Authorization = token;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      // not JSON: keep the text so the assertion shows it
    }
    return { status: response.status, body: parsed as T, headers: response.headers };
  };
  return {
    request,
    get: (path) => request("GET", path),
    post: (path, body) => request("POST", path, body),
    put: (path, body) => request("PUT", path, body),
    delete: (path, body) => request("DELETE", path, body),
  };
}

export interface TestUser {
  userId: string;
  email: string;
  token: string;
  api: ApiClient;
}

export interface TestStack extends LocalStack {
  /** A new user with a fresh token and an API client that sends it. */
  newUser(overrides?: { email?: string; firstName?: string; lastName?: string }): Promise<TestUser>;
  anonymous: ApiClient;
}

export async function startTestStack(options: LocalStackOptions = {}): Promise<TestStack> {
  const stack = await startLocalStack(options);
  // Every e2e file checks that configuration is only ever written with its version step.
  const configWrites = watchConfigWrites();
  return {
    ...stack,
    async stop() {
      configWrites.stop();
      await stack.stop();
      if (configWrites.offences.length > 0)
        throw new Error(
          `Configuration written without moving configVersion in the same transaction (test/support/config-atomicity.ts):\n${[...new Set(configWrites.offences)].join("\n")}`,
        );
    },
    anonymous: apiClient(stack.baseUrl),
    async newUser(overrides = {}) {
      counter += 1;
      const email = overrides.email ?? `user${counter}-${Date.now()}@example.test`;
      const user = await createUser({
        email,
        firstName: overrides.firstName ?? `First${counter}`,
        lastName: overrides.lastName ?? `Last${counter}`,
      });
      const { token } = await issueToken(String(user.userId));
      return {
        userId: String(user.userId),
        email: email.toLowerCase(),
        token,
        api: apiClient(stack.baseUrl, token),
      };
    },
  };
}

/** Read an item straight from a table (assertions on stored state). */
export async function storedItem(key: Key, region = getConfig().homeRegion) {
  const result = await dynamo(region).send(
    new GetCommand({ TableName: getConfig().tableName, Key: key, ConsistentRead: true }),
  );
  return result.Item;
}

/** Make `user` a member of a client through the real invite flow over HTTP (admin invites, user accepts). */
export async function joinClient(admin: TestUser, clientId: string, user: TestUser, role: ClientRole) {
  const invite = await admin.api.post(`/api/clients/${clientId}/invites`, { email: user.email, role });
  if (invite.status !== 201)
    throw new Error(`invite failed: ${invite.status} ${JSON.stringify(invite.body)}`);
  const inviteId = invite.body.invites[0].inviteId as string;
  const accepted = await user.api.put(`/api/users/${user.userId}/invites/${inviteId}`, {
    acceptInvite: true,
  });
  if (accepted.status !== 200)
    throw new Error(`accept failed: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  return inviteId;
}

/** Create a client over HTTP and return its id. */
export async function createClientFor(user: TestUser, clientName = "Acme"): Promise<string> {
  const response = await user.api.post("/api/clients", { clientName });
  if (response.status !== 201)
    throw new Error(`create client failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.clients[0].clientId as string;
}

/** The one item of a 201 answer's wrapper array (`credentials`, `targets`, `proxies`, ...). */
export async function created(response: Promise<ApiResult<any>>, key: string): Promise<Record<string, any>> {
  const result = await response;
  expect(result.status, JSON.stringify(result.body)).toBe(201);
  return result.body[key][0];
}

/** A request to a data-plane address, with the body kept as bytes and as text. */
export async function callDataPlane(url: string, init: RequestInit = {}) {
  const response = await fetch(url, init);
  const body = Buffer.from(await response.arrayBuffer());
  return { status: response.status, headers: response.headers, body, text: body.toString("utf8") };
}

/** The ids of a proxy's parts: an apiKey proxy credential, a `none` target credential, a target. */
export interface ProxyParts {
  proxyCredentialId: string;
  targetCredentialId: string;
  targetId: string;
}

/**
 * Create, through the Core API, what a proxy links to: an apiKey proxy credential (`x-api-key:
 * <key>`), a target credential (type `none` unless `targetCredential` says), and a target at
 * `targetBaseURL`, in `region`.
 */
export async function createProxyParts(
  user: TestUser,
  clientId: string,
  options: {
    region: string;
    key: string;
    targetBaseURL: string;
    targetCredential?: { authType: string; secret: Record<string, unknown> };
  },
): Promise<ProxyParts> {
  const api = `/api/clients/${clientId}`;
  const [proxyCredential, targetCredential, target] = await Promise.all([
    created(
      user.api.post(`${api}/credentials`, {
        credentialName: "caller",
        credentialType: "proxy",
        authType: "apiKey",
        region: options.region,
        secret: { keyName: "x-api-key", keyValue: options.key },
      }),
      "credentials",
    ),
    created(
      user.api.post(`${api}/credentials`, {
        credentialName: "upstream",
        credentialType: "target",
        authType: options.targetCredential?.authType ?? "none",
        region: options.region,
        secret: options.targetCredential?.secret ?? {},
      }),
      "credentials",
    ),
    created(
      user.api.post(`${api}/targets`, {
        targetName: "t",
        targetRegion: options.region,
        targetBaseURL: options.targetBaseURL,
        targetTestPath: "/",
      }),
      "targets",
    ),
  ]);
  return {
    proxyCredentialId: proxyCredential.credentialId,
    targetCredentialId: targetCredential.credentialId,
    targetId: target.targetId,
  };
}

/** Create, through the Core API, a proxy of `parts` in `region` (a random name unless given); its id. */
export async function createProxyOf(
  user: TestUser,
  clientId: string,
  region: string,
  parts: ProxyParts,
  proxyName = `p-${Math.random().toString(36).slice(2, 8)}`,
): Promise<string> {
  const proxy = await created(
    user.api.post(`/api/clients/${clientId}/proxies`, {
      proxyName,
      proxyRegion: region,
      proxyProxyCredentialId: parts.proxyCredentialId,
      proxyTargetId: parts.targetId,
      proxyTargetCredentialId: parts.targetCredentialId,
    }),
    "proxies",
  );
  return proxy.proxyId as string;
}
