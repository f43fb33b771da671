/**
 * The contract test (issue 8): over real HTTP against the local stack, every operation of the
 * registry is called at least once with a real, successful request, and its answer is checked
 * against the operation's declared status and response schema, strictly: a key the schema does not
 * declare, at any depth, fails (the schema must say what the API returns, and nothing else leaves).
 *
 * The table below says how to call each route, keyed by "METHOD path" (the operation is looked up
 * by method and path). A route or operation without an entry fails the test and is named: add an
 * entry when you add an operation.
 *
 * Each entry creates what it consumes (the thing it deletes, the invite it rejects), so entries do
 * not depend on each other's order. A few error answers are checked for the error shape too.
 */
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import { operationKey } from "#lib/api/dispatch.ts";
import type { Operation } from "#lib/api/operation.ts";
import { OPERATIONS } from "#lib/api/registry.ts";
import { CORE_API_ROUTES } from "#lib/api/routes.ts";
import { putNotificationIfAbsent } from "#lib/db/entities/notification.ts";
import { keys } from "#lib/db/keys.ts";
import { usageNotification } from "#lib/domain/meter-digests.ts";
import { createMsp } from "#lib/domain/msps.ts";
import { createNotification } from "#lib/domain/notifications.ts";
import { issueToken } from "#lib/domain/tokens.ts";
import { setSystemAdmin } from "#lib/domain/users.ts";
import { closeOutboundAgents } from "#lib/net/outbound.ts";
import { setClientPlan } from "../../cli/client-plan.ts";
import { sentEmails } from "../support/emulator.ts";
import { Browser, type OAuthServer, serviceClient, startOAuthServer } from "../support/oauth-server.ts";
import {
  type PaymentProcessor,
  type PaymentsEnvironment,
  startPaymentsEnvironment,
} from "../support/payment-processor.ts";
import {
  type ApiClient,
  callDataPlane,
  createClientFor,
  created,
  joinClient,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";
import { SoftwareAuthenticator } from "../support/webauthn-authenticator.ts";

const US = "us-east-1";
const WEB_CLIENT = "contract-web";
const WEB_SECRET = `web-${randomUUID()}`;
const SERVICE_CLIENT = "contract-service";
const SERVICE_SECRET = `svc-${randomUUID()}`;

// ---------------------------------------------------------------- the strict schema check

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Paths of the keys in `actual` that `kept` (the schema's output for it) dropped, at any depth
 * ("proxies[0].entity"). Comparing against the schema's own output follows every zod construct
 * (unions, records, optional, nullable, loose objects) exactly as the dispatcher's shaping does.
 */
function droppedKeys(actual: unknown, kept: unknown, path = ""): string[] {
  if (Array.isArray(actual))
    return Array.isArray(kept)
      ? actual.flatMap((item, i) => droppedKeys(item, kept[i], `${path}[${i}]`))
      : [];
  if (!isObject(actual) || !isObject(kept)) return [];
  return Object.keys(actual).flatMap((key) => {
    const at = path ? `${path}.${key}` : key;
    return Object.hasOwn(kept, key) ? droppedKeys(actual[key], kept[key], at) : [at];
  });
}

/** Problems of a body against a declared schema: a mismatch, or a key the schema does not declare. */
function strictProblems(schema: z.ZodType, body: unknown): string[] {
  const parsed = schema.safeParse(body);
  if (!parsed.success)
    return parsed.error.issues.map((issue) => `${issue.path.join(".") || "(body)"}: ${issue.message}`);
  return droppedKeys(body, parsed.data).map((path) => `${path}: not declared in the response schema`);
}

// ---------------------------------------------------------------- fixtures

interface Fixtures {
  owner: TestUser;
  /** Member of the client (role `user`, made `reader` by the member update). */
  member: TestUser;
  /** Invited and not yet answered: the client's invite routes and the invitee's read them. */
  invitee: TestUser;
  pendingInviteId: string;
  /** Accepts their invite (PUT /api/users/{userId}/invites/{inviteId}). */
  acceptor: TestUser;
  acceptInviteId: string;
  /** A member who leaves (DELETE membership), and one the owner removes. */
  leaver: TestUser;
  removed: TestUser;
  systemAdmin: TestUser;
  clientId: string;
  /** An MSP whose msp_owner is the owner, with a managed client the owner is an admin of. */
  mspId: string;
  mspClientId: string;
  /** A second MSP member (msp_user), whose roles the member update changes. */
  mspStaff: TestUser;
  /** A pending MSP invite (also addressed to the invitee, so their list holds both kinds). */
  mspInviteId: string;
  proxyCredentialId: string;
  targetCredentialId: string;
  oauthCredentialId: string;
  targetId: string;
  proxyId: string;
  /** A proxy of its own for the meters, so they never touch the data-plane call above. */
  meterProxyId: string;
  meterId: string;
  requestTransformId: string;
  responseTransformId: string;
  requestId: string;
  systemNotificationId: string;
  userNotificationId: string;
  clientNotificationId: string;
}

let stack: TestStack;
let echo: Server;
let echoBase: string;
let oauth: OAuthServer;
let f: Fixtures;

const client = () => `/api/clients/${f.clientId}`;

/** The key callers send, by proxy credential id. */
const callerKeys = new Map<string, string>();

async function proxyCredential(): Promise<string> {
  const keyValue = `caller-${randomUUID()}`;
  const credential = await created(
    f.owner.api.post(`${client()}/credentials`, {
      credentialName: "caller",
      credentialType: "proxy",
      authType: "apiKey",
      region: US,
      secret: { keyName: "x-api-key", keyValue },
    }),
    "credentials",
  );
  callerKeys.set(credential.credentialId as string, keyValue);
  return credential.credentialId as string;
}

async function targetCredential(): Promise<string> {
  const credential = await created(
    f.owner.api.post(`${client()}/credentials`, {
      credentialName: "upstream",
      credentialType: "target",
      authType: "bearer",
      region: US,
      secret: { token: `upstream-${randomUUID()}` },
    }),
    "credentials",
  );
  return credential.credentialId as string;
}

async function target(): Promise<string> {
  const made = await created(
    f.owner.api.post(`${client()}/targets`, {
      targetName: "echo",
      targetRegion: US,
      targetBaseURL: echoBase,
      targetTestPath: "/health",
    }),
    "targets",
  );
  return made.targetId as string;
}

const proxyBody = (proxyCredentialId: string) => ({
  proxyName: "contract",
  proxyRegion: US,
  proxyProxyCredentialId: proxyCredentialId,
  proxyTargetId: f.targetId,
  proxyTargetCredentialId: f.targetCredentialId,
});

async function proxy(): Promise<string> {
  const made = await created(
    f.owner.api.post(`${client()}/proxies`, proxyBody(await proxyCredential())),
    "proxies",
  );
  return made.proxyId as string;
}

async function managedClient(clientName: string): Promise<string> {
  const made = await f.owner.api.post(`/api/msps/${f.mspId}/clients`, { clientName });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return made.body.client.clientId as string;
}

async function mspInvite(userEmail: string, roles = ["msp_user"]): Promise<string> {
  const made = await created(
    f.owner.api.post(`/api/msps/${f.mspId}/invites`, { userEmail, roles }),
    "invites",
  );
  return made.inviteId as string;
}

/** `user` joins the fixture MSP through an MSP invite they accept. */
async function joinMsp(user: TestUser, roles: string[]): Promise<void> {
  const inviteId = await mspInvite(user.email, roles);
  const accepted = await user.api.put(`/api/users/${user.userId}/invites/${inviteId}`, {
    acceptInvite: true,
  });
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
}

async function invite(email: string, role = "user"): Promise<string> {
  const made = await created(f.owner.api.post(`${client()}/invites`, { email, role }), "invites");
  return made.inviteId as string;
}

const RULE = {
  effect: "deny",
  priority: 100,
  methods: ["DELETE"],
  path: { pattern: "^/admin", presence: "present" },
};

/** The rule parents: path segment and the fixture id of each. */
const RULE_PARENTS = [
  ["credentials/{credentialId}", (fx: Fixtures) => ({ credentialId: fx.proxyCredentialId })],
  ["proxies/{proxyId}", (fx: Fixtures) => ({ proxyId: fx.proxyId })],
  ["targets/{targetId}", (fx: Fixtures) => ({ targetId: fx.targetId })],
] as const;

async function rule(parentPath: string, parentParams: Record<string, string>): Promise<string> {
  const made = await created(
    f.owner.api.post(`${client()}/${fillPath(parentPath, parentParams)}/rules`, RULE),
    "rules",
  );
  return made.ruleId as string;
}

/** A meter with every optional field set, so the strict check covers each nested key. */
const METER = {
  meterType: "response_value",
  meterActive: true,
  meterMode: "conditional",
  effect: "include",
  limits: { minute: 1000, month: 100000 },
  extraction: { location: "body", path: "usage.total_tokens", defaultValue: 0 },
  methods: ["POST"],
  path: { pattern: "^/v1/chat", presence: "present" },
  query: [{ name: "stream", presence: "absent" }],
  headers: [{ name: "x-tier", pattern: "^free$", presence: "present" }],
  body: [{ path: "model", pattern: "^gpt", presence: "present" }],
  token: [{ claim: "scope", presence: "present" }],
  variables: [{ name: "sub", source: "token", key: "sub" }],
  limitBy: "sub",
  alerts: { enabled: true, cadence: "day", notifyTrigger: "threshold", alertThreshold: { day: 80000 } },
  notes: "contract",
};

async function meter(): Promise<string> {
  const made = await created(
    f.owner.api.post(`${client()}/proxies/${f.meterProxyId}/meters`, METER),
    "meters",
  );
  return made.meterId as string;
}

/** Transforms with every optional field set (on the meters' proxy: never on the data-plane path). */
const TRANSFORM_FIELDS = {
  transformMode: "conditional",
  effect: "include",
  transformActive: true,
  priority: 10,
  methods: ["POST"],
  path: { pattern: "^/v1", presence: "present" },
  query: [{ name: "debug", presence: "absent" }],
  headers: [{ name: "x-tier", pattern: "^free$", presence: "present" }],
  body: [{ path: "model", pattern: "^gpt", presence: "present" }],
  token: [{ claim: "scope", presence: "present" }],
  variables: [{ name: "sub", source: "token", key: "sub" }],
  notes: "contract",
};
const REQUEST_TRANSFORM = {
  ...TRANSFORM_FIELDS,
  code: "export default function (context: unknown, request: { headers: object }) {\n  return request;\n}\n",
};
const RESPONSE_TRANSFORM = {
  ...TRANSFORM_FIELDS,
  responseHeaders: [{ name: "content-type", pattern: "json", presence: "present" }],
  responseBody: [{ path: "data.id", presence: "present" }],
  responseStatus: [{ operator: "lt", value: 400 }],
  code: "export default (context, request, response) => response\n",
};

async function transform(kind: "request" | "response"): Promise<string> {
  const made = await created(
    f.owner.api.post(
      `${client()}/proxies/${f.meterProxyId}/${kind}-transforms`,
      kind === "request" ? REQUEST_TRANSFORM : RESPONSE_TRANSFORM,
    ),
    kind === "request" ? "requestTransforms" : "responseTransforms",
  );
  return made.transformId as string;
}

// ---------------------------------------------------------------- the table

type Caller = TestUser | "anonymous";

interface Call {
  /** Default: the client's owner. An operation's declared access overrides it for `public` and `systemAdmin`. */
  as?: Caller;
  params?: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
  /** A session cookie to send (the /auth routes); the call is then made without a token. */
  cookie?: string;
  /** Headers to send instead of a token (a signed webhook); a string body is sent as it is. */
  headers?: Record<string, string>;
}

interface Entry {
  /** How to call the route; may create what it consumes (what it deletes, the invite it answers). */
  call: (fx: Fixtures) => Call | Promise<Call>;
  /**
   * The success status the route answers today (405 for a route that exists only to say what to
   * use instead). An operation's declared status must agree with it.
   */
  status: number;
  /**
   * The answer is not the API's `{message, ...}` envelope (a document such as an OpenAPI file or a
   * page): only the status and, for an operation, its declared schema are checked.
   */
  notEnvelope?: true;
}

const UNSUPPORTED = 405;
const STRIPE_WEBHOOK_SECRET = "whsec_contract_secret";

/** Every route of the Core API, by "METHOD path". */
const CONTRACT: Record<string, Entry> = {
  // ---- 4.1 Clients
  "GET /api/clients": { status: 200, call: () => ({}) },
  "POST /api/clients": { status: 201, call: () => ({ body: { clientName: "Contract Extra" } }) },
  "GET /api/clients/{clientId}": { status: 200, call: (fx) => ({ params: { clientId: fx.clientId } }) },
  "PUT /api/clients/{clientId}": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId }, body: { clientName: "Contract Co" } }),
  },
  "DELETE /api/clients/{clientId}": {
    status: 200,
    call: async (fx) => ({
      params: { clientId: await createClientFor(fx.owner, "Doomed Co") },
      body: { immediatelyDelete: true },
    }),
  },

  // ---- 4.2 Members and memberships
  "GET /api/clients/{clientId}/members": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId } }),
  },
  "POST /api/clients/{clientId}/members": {
    status: UNSUPPORTED,
    call: (fx) => ({ params: { clientId: fx.clientId }, body: { email: fx.member.email } }),
  },
  "GET /api/clients/{clientId}/members/{userId}": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, userId: fx.member.userId } }),
  },
  "PUT /api/clients/{clientId}/members/{userId}": {
    status: 200,
    call: (fx) => ({
      params: { clientId: fx.clientId, userId: fx.member.userId },
      body: { roles: ["reader"] },
    }),
  },
  "DELETE /api/clients/{clientId}/members/{userId}": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, userId: fx.removed.userId } }),
  },
  "GET /api/users/{userId}/memberships": {
    status: 200,
    call: (fx) => ({ params: { userId: fx.owner.userId } }),
  },
  "POST /api/users/{userId}/memberships": {
    status: UNSUPPORTED,
    call: (fx) => ({ params: { userId: fx.owner.userId }, body: {} }),
  },
  "PUT /api/users/{userId}/memberships": {
    status: UNSUPPORTED,
    call: (fx) => ({ params: { userId: fx.owner.userId }, body: {} }),
  },
  "GET /api/users/{userId}/memberships/{membershipId}": {
    status: 200,
    call: (fx) => ({ params: { userId: fx.owner.userId, membershipId: fx.clientId } }),
  },
  "POST /api/users/{userId}/memberships/{membershipId}": {
    status: UNSUPPORTED,
    call: (fx) => ({ params: { userId: fx.owner.userId, membershipId: fx.clientId }, body: {} }),
  },
  "PUT /api/users/{userId}/memberships/{membershipId}": {
    status: UNSUPPORTED,
    call: (fx) => ({ params: { userId: fx.owner.userId, membershipId: fx.clientId }, body: {} }),
  },
  "DELETE /api/users/{userId}/memberships/{membershipId}": {
    status: 200,
    call: (fx) => ({ as: fx.leaver, params: { userId: fx.leaver.userId, membershipId: fx.clientId } }),
  },

  // ---- 4.3 Invites
  "GET /api/clients/{clientId}/invites": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId } }),
  },
  "POST /api/clients/{clientId}/invites": {
    status: 201,
    call: (fx) => ({
      params: { clientId: fx.clientId },
      body: { email: `new-${randomUUID()}@example.test`, role: "reader" },
    }),
  },
  "GET /api/clients/{clientId}/invites/{inviteId}": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, inviteId: fx.pendingInviteId } }),
  },
  "PUT /api/clients/{clientId}/invites/{inviteId}": {
    status: 200,
    call: (fx) => ({
      params: { clientId: fx.clientId, inviteId: fx.pendingInviteId },
      body: { roles: ["user"] },
    }),
  },
  "DELETE /api/clients/{clientId}/invites/{inviteId}": {
    status: 200,
    call: async (fx) => ({
      params: { clientId: fx.clientId, inviteId: await invite(`cancelled-${randomUUID()}@example.test`) },
    }),
  },
  "GET /api/users/{userId}/invites": {
    status: 200,
    call: (fx) => ({ as: fx.invitee, params: { userId: fx.invitee.userId } }),
  },
  "POST /api/users/{userId}/invites": {
    status: UNSUPPORTED,
    call: (fx) => ({ as: fx.invitee, params: { userId: fx.invitee.userId }, body: {} }),
  },
  "GET /api/users/{userId}/invites/{inviteId}": {
    status: 200,
    call: (fx) => ({ as: fx.invitee, params: { userId: fx.invitee.userId, inviteId: fx.pendingInviteId } }),
  },
  "PUT /api/users/{userId}/invites/{inviteId}": {
    status: 200,
    call: (fx) => ({
      as: fx.acceptor,
      params: { userId: fx.acceptor.userId, inviteId: fx.acceptInviteId },
      body: { acceptInvite: true },
    }),
  },
  "DELETE /api/users/{userId}/invites/{inviteId}": {
    status: 200,
    call: async () => {
      const declining = await stack.newUser();
      return {
        as: declining,
        params: { userId: declining.userId, inviteId: await invite(declining.email) },
      };
    },
  },

  // ---- 4.14 MSP API
  "GET /api/msps/{mspId}/clients": { status: 200, call: (fx) => ({ params: { mspId: fx.mspId } }) },
  "POST /api/msps/{mspId}/clients": {
    status: 201,
    call: (fx) => ({ params: { mspId: fx.mspId }, body: { clientName: "Managed Extra" } }),
  },
  "GET /api/msps/{mspId}/clients/{clientId}": {
    status: 200,
    call: (fx) => ({ params: { mspId: fx.mspId, clientId: fx.mspClientId } }),
  },
  "PUT /api/msps/{mspId}/clients/{clientId}": {
    status: 200,
    call: (fx) => ({
      params: { mspId: fx.mspId, clientId: fx.mspClientId },
      body: { clientName: "Managed Co" },
    }),
  },
  "DELETE /api/msps/{mspId}/clients/{clientId}": {
    status: 200,
    call: async (fx) => {
      const clientId = await managedClient("Detached Co");
      const customer = await stack.newUser();
      const path = `/api/msps/${fx.mspId}/clients/${clientId}`;
      expect(
        (await fx.systemAdmin.api.put(`${path}/members/${customer.userId}`, { roles: ["owner"] })).status,
      ).toBe(200);
      expect((await fx.owner.api.put(`${path}/configurations`, { billingTo: "client" })).status).toBe(200);
      return { params: { mspId: fx.mspId, clientId } };
    },
  },
  "GET /api/msps/{mspId}/clients/{clientId}/members": {
    status: 200,
    call: (fx) => ({ params: { mspId: fx.mspId, clientId: fx.mspClientId } }),
  },
  "GET /api/msps/{mspId}/clients/{clientId}/members/{userId}": {
    status: 200,
    call: (fx) => ({ params: { mspId: fx.mspId, clientId: fx.mspClientId, userId: fx.owner.userId } }),
  },
  "PUT /api/msps/{mspId}/clients/{clientId}/members/{userId}": {
    status: 200,
    call: (fx) => ({
      params: { mspId: fx.mspId, clientId: fx.mspClientId, userId: fx.owner.userId },
      body: { roles: ["admin", "devops"] },
    }),
  },
  "DELETE /api/msps/{mspId}/clients/{clientId}/members/{userId}": {
    status: 200,
    call: async (fx) => {
      const leaving = await stack.newUser();
      const params = { mspId: fx.mspId, clientId: fx.mspClientId, userId: leaving.userId };
      const path = `/api/msps/${fx.mspId}/clients/${fx.mspClientId}/members/${leaving.userId}`;
      expect((await fx.systemAdmin.api.put(path, { roles: ["user"] })).status).toBe(200);
      return { params };
    },
  },
  "GET /api/msps/{mspId}/members": { status: 200, call: (fx) => ({ params: { mspId: fx.mspId } }) },
  "GET /api/msps/{mspId}/members/{userId}": {
    status: 200,
    call: (fx) => ({ params: { mspId: fx.mspId, userId: fx.mspStaff.userId } }),
  },
  "PUT /api/msps/{mspId}/members/{userId}": {
    status: 200,
    call: (fx) => ({
      params: { mspId: fx.mspId, userId: fx.mspStaff.userId },
      body: { roles: ["msp_reader"] },
    }),
  },
  "DELETE /api/msps/{mspId}/members/{userId}": {
    status: 200,
    call: async (fx) => {
      const leaving = await stack.newUser();
      await joinMsp(leaving, ["msp_reader"]);
      return { params: { mspId: fx.mspId, userId: leaving.userId } };
    },
  },
  "GET /api/msps/{mspId}/invites": { status: 200, call: (fx) => ({ params: { mspId: fx.mspId } }) },
  "POST /api/msps/{mspId}/invites": {
    status: 201,
    call: (fx) => ({
      params: { mspId: fx.mspId },
      body: { userEmail: `msp-${randomUUID()}@example.test`, roles: ["msp_user"] },
    }),
  },
  "PUT /api/msps/{mspId}/invites/{inviteId}": {
    status: 200,
    call: (fx) => ({ params: { mspId: fx.mspId, inviteId: fx.mspInviteId }, body: { roles: ["msp_admin"] } }),
  },
  "DELETE /api/msps/{mspId}/invites/{inviteId}": {
    status: 200,
    call: async (fx) => ({
      params: { mspId: fx.mspId, inviteId: await mspInvite(`msp-cancel-${randomUUID()}@example.test`) },
    }),
  },
  "GET /api/msps/{mspId}/configurations": {
    status: 200,
    call: (fx) => ({ params: { mspId: fx.mspId }, query: { configurationType: "msp" } }),
  },
  "PUT /api/msps/{mspId}/configurations": {
    status: 200,
    call: (fx) => ({
      params: { mspId: fx.mspId },
      body: { promotionalCodes: [{ name: "contract", expiresAt: "2030-01-01T00:00:00.000Z" }] },
    }),
  },
  "GET /api/msps/{mspId}/clients/{clientId}/configurations": {
    status: 200,
    call: (fx) => ({ params: { mspId: fx.mspId, clientId: fx.mspClientId } }),
  },
  "PUT /api/msps/{mspId}/clients/{clientId}/configurations": {
    status: 200,
    call: (fx) => ({
      params: { mspId: fx.mspId, clientId: fx.mspClientId },
      body: {
        topUpMethod: "automatic",
        rates: { plan: 0.9 },
        budget: { minimumTopUpThreshold: 10 },
        sharing: { proxies: true },
        limits: { requestsPerMinute: 600 },
      },
    }),
  },
  "GET /api/msps/{mspId}/usage": {
    status: 200,
    call: (fx) => ({ params: { mspId: fx.mspId }, query: { month: new Date().toISOString().slice(0, 7) } }),
  },
  "POST /api/msps/{mspId}/clients/{clientId}/top-ups": {
    status: 201,
    call: async (fx) => ({
      params: { mspId: fx.mspId, clientId: await managedClient("Topped Up") },
      body: { amount: 5 },
    }),
  },

  // ---- 4.4 Users
  "GET /api/users": { status: 200, call: () => ({}) },
  "GET /api/users/{userId}": { status: 200, call: (fx) => ({ params: { userId: fx.owner.userId } }) },
  "PUT /api/users/{userId}": {
    status: 200,
    call: (fx) => ({ params: { userId: fx.owner.userId }, body: { userBio: "Runs the contract test" } }),
  },
  "GET /api/users/{userId}/tokens": { status: 200, call: (fx) => ({ params: { userId: fx.owner.userId } }) },
  "POST /api/users/{userId}/tokens": {
    status: 201,
    call: (fx) => ({ params: { userId: fx.owner.userId }, body: { tokenName: "contract" } }),
  },
  "DELETE /api/users/{userId}/tokens/{tokenId}": {
    status: 200,
    call: async (fx) => {
      const { tokenId } = await issueToken(fx.owner.userId, { tokenName: "to revoke" });
      return { params: { userId: fx.owner.userId, tokenId } };
    },
  },
  "DELETE /api/users/{userId}": {
    status: 200,
    call: async () => {
      const leaving = await stack.newUser();
      return { as: leaving, params: { userId: leaving.userId }, body: { immediatelyDelete: true } };
    },
  },

  // ---- 4.12 Notifications
  "GET /api/notifications/system": { status: 200, call: () => ({}) },
  "GET /api/notifications/system/{notificationId}": {
    status: 200,
    call: (fx) => ({ params: { notificationId: fx.systemNotificationId } }),
  },
  "GET /api/users/{userId}/notifications": {
    status: 200,
    call: (fx) => ({ params: { userId: fx.owner.userId } }),
  },
  "GET /api/users/{userId}/notifications/{notificationId}": {
    status: 200,
    call: (fx) => ({ params: { userId: fx.owner.userId, notificationId: fx.userNotificationId } }),
  },
  "GET /api/clients/{clientId}/notifications": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId } }),
  },
  "GET /api/clients/{clientId}/notifications/{notificationId}": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, notificationId: fx.clientNotificationId } }),
  },

  // ---- 4.5 Credentials
  "GET /api/clients/{clientId}/credentials": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId } }),
  },
  "POST /api/clients/{clientId}/credentials": {
    status: 201,
    call: (fx) => ({
      params: { clientId: fx.clientId },
      body: {
        credentialName: "created",
        credentialType: "target",
        authType: "bearer",
        region: US,
        secret: { token: `created-${randomUUID()}` },
      },
    }),
  },
  "GET /api/clients/{clientId}/credentials/{credentialId}": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, credentialId: fx.targetCredentialId } }),
  },
  "PUT /api/clients/{clientId}/credentials/{credentialId}": {
    status: 200,
    call: (fx) => ({
      params: { clientId: fx.clientId, credentialId: fx.targetCredentialId },
      body: { credentialName: "upstream (renamed)", notes: "contract" },
    }),
  },
  "DELETE /api/clients/{clientId}/credentials/{credentialId}": {
    status: 200,
    call: async (fx) => ({ params: { clientId: fx.clientId, credentialId: await targetCredential() } }),
  },
  "POST /api/clients/{clientId}/credentials/{credentialId}/test": {
    status: 200,
    call: (fx) => ({
      params: { clientId: fx.clientId, credentialId: fx.targetCredentialId },
      body: { targetId: fx.targetId },
    }),
  },
  "POST /api/clients/{clientId}/credentials/{credentialId}/token-test": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, credentialId: fx.oauthCredentialId }, body: {} }),
  },
  // ---- 6.2 The OAuth2 provider's redirect (public): a real authorization through the test provider
  "GET /openapi.json": { status: 200, notEnvelope: true, call: async () => ({}) },
  "GET /docs": { status: 200, notEnvelope: true, call: async () => ({}) },
  "GET /webhooks/oauth2": {
    status: 200,
    call: async () => {
      const pending = await created(
        f.owner.api.post(`${client()}/credentials`, {
          credentialName: "authorized",
          credentialType: "target",
          authType: "oauth2",
          region: US,
          secret: {
            flow: "authorization_code",
            tokenUrl: oauth.tokenUrl,
            authorizationUrl: `${oauth.authorizationUrl}?prompt=consent`,
            clientId: WEB_CLIENT,
            clientSecret: WEB_SECRET,
            scope: "openid offline_access",
          },
        }),
        "credentials",
      );
      const redirect = await new Browser().authorize(pending.authorizationUrl as string);
      return { as: "anonymous", query: Object.fromEntries(redirect.searchParams) };
    },
  },

  // ---- Stripe's signed webhook (issue 24, docs/billing.md): an event of a type the plan ignores
  "POST /webhooks/stripe": {
    status: 200,
    call: async () => {
      const payload = JSON.stringify({
        id: `evt_contract_${randomUUID()}`,
        object: "event",
        type: "customer.updated",
        created: Math.floor(Date.now() / 1000),
        data: { object: { id: "cus_contract", object: "customer" } },
      });
      const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: STRIPE_WEBHOOK_SECRET });
      return { body: payload, headers: { "Stripe-Signature": signature } };
    },
  },

  // ---- Accounts (issue 21): public, JSON, the session in a cookie
  "POST /auth/sign-up": {
    status: 201,
    call: () => ({
      body: { email: accountEmail(), password: ACCOUNT_PASSWORD, firstName: "Ada", lastName: "L" },
    }),
  },
  "POST /auth/verify-email": {
    status: 200,
    call: async () => {
      const email = await signedUpAccount();
      return { body: { email, code: await emailedCode(email, "Verify your e-mail address") } };
    },
  },
  "POST /auth/resend-verification": { status: 200, call: () => ({ body: { email: accountEmail() } }) },
  "POST /auth/sign-in": {
    status: 200,
    call: async () => ({ body: { email: await verifiedAccount(), password: ACCOUNT_PASSWORD } }),
  },
  "GET /auth/session": {
    status: 200,
    notEnvelope: true,
    call: async () => ({ cookie: await accountSession() }),
  },
  "POST /auth/sign-out": { status: 200, call: async () => ({ cookie: await accountSession() }) },
  "GET /auth/sessions": { status: 200, call: async () => ({ cookie: await accountSession() }) },
  "DELETE /auth/sessions/{sessionId}": {
    status: 200,
    call: async () => {
      const cookie = await accountSession();
      const listed = await cookieClient(cookie).get("/auth/sessions");
      return { cookie, params: { sessionId: String(listed.body.sessions?.[0]?.sessionId) } };
    },
  },
  "POST /auth/forgot-password": { status: 200, call: () => ({ body: { email: accountEmail() } }) },
  "POST /auth/reset-password": {
    status: 200,
    call: async () => {
      const email = await verifiedAccount();
      await stack.anonymous.post("/auth/forgot-password", { email });
      const code = await emailedCode(email, "Reset your password");
      return { body: { email, code, password: "another long passphrase" } };
    },
  },
  "POST /auth/change-password": {
    status: 200,
    call: async () => ({
      cookie: await accountSession(),
      body: { currentPassword: ACCOUNT_PASSWORD, newPassword: "contract ledger 7 harbour violet" },
    }),
  },

  // ---- Passkeys (issue 22): public, the session in a cookie, a software authenticator
  "POST /auth/passkeys/registration-options": {
    status: 200,
    call: async () => ({ cookie: await accountSession() }),
  },
  "POST /auth/passkeys/registration": {
    status: 201,
    call: async () => {
      const cookie = await accountSession();
      const started = await cookieClient(cookie).post("/auth/passkeys/registration-options");
      const { response } = new SoftwareAuthenticator(PASSKEY_ORIGIN).register(started.body.options);
      return { cookie, body: { challengeId: started.body.challengeId, response, name: "Contract" } };
    },
  },
  "POST /auth/passkeys/authentication-options": { status: 200, call: () => ({ as: "anonymous" }) },
  "POST /auth/passkeys/authentication": {
    status: 200,
    call: async () => {
      const { authenticator } = await accountWithPasskey();
      const started = await stack.anonymous.post("/auth/passkeys/authentication-options");
      const response = authenticator.authenticate(started.body.options);
      return { as: "anonymous", body: { challengeId: started.body.challengeId, response } };
    },
  },
  "GET /auth/passkeys": {
    status: 200,
    call: async () => ({ cookie: (await accountWithPasskey()).cookie }),
  },
  "DELETE /auth/passkeys/{passkeyId}": {
    status: 200,
    call: async () => {
      const { cookie, passkeyId } = await accountWithPasskey();
      return { cookie, params: { passkeyId } };
    },
  },
  "POST /auth/passkeys/remove": {
    status: 200,
    call: async () => {
      const { email, passkeyId } = await accountWithPasskey();
      await stack.anonymous.post("/auth/forgot-password", { email });
      const code = await emailedCode(email, "Reset your password");
      const reset = await stack.anonymous.post("/auth/reset-password", {
        email,
        code,
        password: "another long passphrase",
      });
      const recoveryToken = String(reset.body.recoveryToken);
      return { as: "anonymous", body: { email, passkeyId, recoveryToken } };
    },
  },

  // ---- 4.6 Targets
  "GET /api/clients/{clientId}/targets": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId } }),
  },
  "POST /api/clients/{clientId}/targets": {
    status: 201,
    call: (fx) => ({
      params: { clientId: fx.clientId },
      body: { targetName: "created", targetRegion: US, targetBaseURL: echoBase, targetTestPath: "/health" },
    }),
  },
  "GET /api/clients/{clientId}/targets/{targetId}": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, targetId: fx.targetId } }),
  },
  "PUT /api/clients/{clientId}/targets/{targetId}": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, targetId: fx.targetId }, body: { notes: "contract" } }),
  },
  "DELETE /api/clients/{clientId}/targets/{targetId}": {
    status: 200,
    call: async (fx) => ({ params: { clientId: fx.clientId, targetId: await target() } }),
  },

  // ---- 4.7 Proxies
  "GET /api/clients/{clientId}/proxies": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId } }),
  },
  "POST /api/clients/{clientId}/proxies": {
    status: 201,
    call: async (fx) => ({ params: { clientId: fx.clientId }, body: proxyBody(await proxyCredential()) }),
  },
  "GET /api/clients/{clientId}/proxies/{proxyId}": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.proxyId } }),
  },
  "PUT /api/clients/{clientId}/proxies/{proxyId}": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.proxyId }, body: { notes: "contract" } }),
  },
  "DELETE /api/clients/{clientId}/proxies/{proxyId}": {
    status: 200,
    call: async (fx) => ({ params: { clientId: fx.clientId, proxyId: await proxy() } }),
  },

  // ---- 4.11 Request logs: a record of a real data-plane call
  "GET /api/clients/{clientId}/proxies/{proxyId}/requests": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.proxyId } }),
  },
  "GET /api/clients/{clientId}/proxies/{proxyId}/requests/{requestId}": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.proxyId, requestId: fx.requestId } }),
  },

  // ---- 4.1 / 4.7 Telemetry (the records' content: test/e2e/telemetry.test.ts)
  "GET /api/clients/{clientId}/telemetry": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId }, query: { interval: "day", limit: "5" } }),
  },
  "GET /api/clients/{clientId}/proxies/{proxyId}/telemetry": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.proxyId } }),
  },

  // ---- 4.9 Meters, on their own proxy
  "GET /api/clients/{clientId}/proxies/{proxyId}/meters": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.meterProxyId } }),
  },
  "POST /api/clients/{clientId}/proxies/{proxyId}/meters": {
    status: 201,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.meterProxyId }, body: METER }),
  },
  "GET /api/clients/{clientId}/proxies/{proxyId}/meters/{meterId}": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.meterProxyId, meterId: fx.meterId } }),
  },
  "GET /api/clients/{clientId}/proxies/{proxyId}/meters/{meterId}/usage": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.meterProxyId, meterId: fx.meterId } }),
  },
  "PUT /api/clients/{clientId}/proxies/{proxyId}/meters/{meterId}": {
    status: 200,
    call: (fx) => ({
      params: { clientId: fx.clientId, proxyId: fx.meterProxyId, meterId: fx.meterId },
      body: { meterActive: false, limits: { hour: 5000 }, notes: null },
    }),
  },
  "DELETE /api/clients/{clientId}/proxies/{proxyId}/meters/{meterId}": {
    status: 200,
    call: async (fx) => ({
      params: { clientId: fx.clientId, proxyId: fx.meterProxyId, meterId: await meter() },
    }),
  },

  // ---- 4.10 Transforms, on the meters' proxy
  ...Object.fromEntries(
    (["request", "response"] as const).flatMap((kind): [string, Entry][] => {
      const base = `/api/clients/{clientId}/proxies/{proxyId}/${kind}-transforms`;
      const idOf = (fx: Fixtures) => (kind === "request" ? fx.requestTransformId : fx.responseTransformId);
      const one = (fx: Fixtures, transformId = idOf(fx)) => ({
        clientId: fx.clientId,
        proxyId: fx.meterProxyId,
        transformId,
      });
      return [
        [
          `GET ${base}`,
          { status: 200, call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.meterProxyId } }) },
        ],
        [
          `POST ${base}`,
          {
            status: 201,
            call: (fx) => ({
              params: { clientId: fx.clientId, proxyId: fx.meterProxyId },
              body: kind === "request" ? REQUEST_TRANSFORM : RESPONSE_TRANSFORM,
            }),
          },
        ],
        [`GET ${base}/{transformId}`, { status: 200, call: (fx) => ({ params: one(fx) }) }],
        [
          `PUT ${base}/{transformId}`,
          {
            status: 200,
            call: (fx) => ({ params: one(fx), body: { transformActive: false, priority: 5, notes: null } }),
          },
        ],
        [
          `DELETE ${base}/{transformId}`,
          { status: 200, call: async (fx) => ({ params: one(fx, await transform(kind)) }) },
        ],
      ];
    }),
  ),

  // ---- Filters and overrides (issue 10), on the meters' proxy; plan limit overrides on a client of their own
  "GET /api/clients/{clientId}/proxies/{proxyId}/filters": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.meterProxyId } }),
  },
  "PUT /api/clients/{clientId}/proxies/{proxyId}/filters": {
    status: 200,
    call: (fx) => ({
      params: { clientId: fx.clientId, proxyId: fx.meterProxyId },
      body: {
        ipAllow: ["10.0.0.0/8", "2001:db8::/32"],
        ipDeny: ["10.9.0.0/16"],
        requiredHeaders: ["X-Tenant"],
        stripHeaders: ["x-debug"],
        removeResponseFields: ["secret", "items.*.internal"],
      },
    }),
  },
  "DELETE /api/clients/{clientId}/proxies/{proxyId}/filters": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.meterProxyId } }),
  },
  "GET /api/clients/{clientId}/proxies/{proxyId}/overrides": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.meterProxyId } }),
  },
  "PUT /api/clients/{clientId}/proxies/{proxyId}/overrides": {
    status: 200,
    call: (fx) => ({
      params: { clientId: fx.clientId, proxyId: fx.meterProxyId },
      body: {
        pathOverrides: [
          { pathPrefix: "/slow", timeoutSeconds: 60 },
          { pathPrefix: "/v2", additionalHeaders: { "X-Version": "2" } },
        ],
      },
    }),
  },
  "DELETE /api/clients/{clientId}/proxies/{proxyId}/overrides": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId, proxyId: fx.meterProxyId } }),
  },
  "GET /api/clients/{clientId}/limit-overrides": {
    status: 200,
    call: async (fx) => ({ params: { clientId: await createClientFor(fx.owner, "Limits Co") } }),
  },
  "PUT /api/clients/{clientId}/limit-overrides": {
    status: 200,
    call: async (fx) => ({
      params: { clientId: await createClientFor(fx.owner, "Limits Co") },
      body: { requestsPerMinute: 250 },
    }),
  },
  "DELETE /api/clients/{clientId}/limit-overrides": {
    status: 200,
    call: async (fx) => ({ params: { clientId: await createClientFor(fx.owner, "Limits Co") } }),
  },
  "GET /api/clients/{clientId}/feature-overrides": {
    status: 200,
    call: async (fx) => ({ params: { clientId: await createClientFor(fx.owner, "Overrides Co") } }),
  },
  "PUT /api/clients/{clientId}/feature-overrides": {
    status: 200,
    call: async (fx) => ({
      params: { clientId: await createClientFor(fx.owner, "Overrides Co") },
      body: { featureOverrides: ["core_api_rate_limit_x10"], promoOverrides: ["extended_trial"] },
    }),
  },

  // ---- Billing (issue 24): the owner's operations, each on a client of its own; the MSP's payment method
  "POST /api/clients/{clientId}/billing/checkout": {
    status: 201,
    call: async (fx) => ({
      params: { clientId: await createClientFor(fx.owner, "Upgrading Co") },
      body: { planTier: "team" },
    }),
  },
  "POST /api/clients/{clientId}/billing/downgrade": {
    status: 200,
    call: async (fx) => {
      const clientId = await createClientFor(fx.owner, "Downgrading Co");
      await setClientPlan(clientId, "team");
      const customerId = String((await storedItem(keys.clientConfig(clientId)))?.paymentCustomerId);
      processor.addSubscription(customerId, CONTRACT_TEAM_PRICE, { clientId });
      return { params: { clientId }, body: { planTier: "basic" } };
    },
  },
  "GET /api/clients/{clientId}/billing": {
    status: 200,
    call: (fx) => ({ params: { clientId: fx.clientId } }),
  },
  "POST /api/clients/{clientId}/billing/portal": {
    status: 201,
    call: (fx) => ({ params: { clientId: fx.clientId } }),
  },
  "GET /api/clients/{clientId}/billing/invoices": {
    status: 200,
    call: async (fx) => {
      const clientId = await createClientFor(fx.owner, "Invoiced Co");
      processor.addInvoice(String((await storedItem(keys.clientConfig(clientId)))?.paymentCustomerId));
      return { params: { clientId } };
    },
  },
  "POST /api/msps/{mspId}/billing/payment-method": {
    status: 201,
    call: (fx) => ({ params: { mspId: fx.mspId } }),
  },

  // ---- 4.8 Rules, on each of the three parents
  ...Object.fromEntries(
    RULE_PARENTS.flatMap(([parent, parentParams]): [string, Entry][] => {
      const base = `/api/clients/{clientId}/${parent}/rules`;
      return [
        [
          `GET ${base}`,
          { status: 200, call: (fx) => ({ params: { clientId: fx.clientId, ...parentParams(fx) } }) },
        ],
        [
          `POST ${base}`,
          {
            status: 201,
            call: (fx) => ({ params: { clientId: fx.clientId, ...parentParams(fx) }, body: RULE }),
          },
        ],
        [
          `DELETE ${base}/{ruleId}`,
          {
            status: 200,
            call: async (fx) => ({
              params: {
                clientId: fx.clientId,
                ...parentParams(fx),
                ruleId: await rule(parent, parentParams(fx)),
              },
            }),
          },
        ],
      ];
    }),
  ),
};

// ---------------------------------------------------------------- accounts (the /auth routes)

const ACCOUNT_PASSWORD = "correct horse battery staple";
let accounts = 0;
const accountEmail = () => `contract-account${++accounts}-${Date.now()}@example.test`;

/** The 6-digit code of the newest e-mail of `subject` to `email`, as the emulator recorded it. */
async function emailedCode(email: string, subject: string): Promise<string> {
  const messages = (await sentEmails(email)).filter((message) => message.subject === subject);
  const code = /code is (?:<strong>)?(\d{6})/.exec(messages.at(-1)?.body ?? "")?.[1];
  if (!code) throw new Error(`no code e-mailed to ${email}`);
  return code;
}

async function signedUpAccount(): Promise<string> {
  const email = accountEmail();
  const answer = await stack.anonymous.post("/auth/sign-up", {
    email,
    password: ACCOUNT_PASSWORD,
    firstName: "Ada",
    lastName: "L",
  });
  if (answer.status !== 201) throw new Error(`sign-up: ${answer.status} ${JSON.stringify(answer.body)}`);
  return email;
}

async function verifiedAccount(): Promise<string> {
  const email = await signedUpAccount();
  const code = await emailedCode(email, "Verify your e-mail address");
  const answer = await stack.anonymous.post("/auth/verify-email", { email, code });
  if (answer.status !== 200) throw new Error(`verify: ${answer.status} ${JSON.stringify(answer.body)}`);
  return email;
}

/** The Cookie header of a new session of a new, verified account. */
async function accountSession(email?: string): Promise<string> {
  email ??= await verifiedAccount();
  const answer = await stack.anonymous.post("/auth/sign-in", { email, password: ACCOUNT_PASSWORD });
  const cookie = (answer.headers.get("set-cookie") ?? "").split(";")[0];
  if (answer.status !== 200 || !cookie)
    throw new Error(`sign-in: ${answer.status} ${JSON.stringify(answer.body)}`);
  return cookie;
}

/** The origin of passkey ceremonies: APP_URL (test/setup/file-env.ts), the relying party's default. */
const PASSKEY_ORIGIN = "http://app.gateway.test";

/** A signed-in account with one passkey of a software authenticator. */
async function accountWithPasskey() {
  const email = await verifiedAccount();
  const cookie = await accountSession(email);
  const client = cookieClient(cookie);
  const started = await client.post("/auth/passkeys/registration-options");
  const authenticator = new SoftwareAuthenticator(PASSKEY_ORIGIN);
  const { response } = authenticator.register(started.body.options);
  const registered = await client.post("/auth/passkeys/registration", {
    challengeId: started.body.challengeId,
    response,
  });
  if (registered.status !== 201)
    throw new Error(`passkey registration: ${registered.status} ${JSON.stringify(registered.body)}`);
  return { email, cookie, authenticator, passkeyId: String(registered.body.passkeys[0].passkeyId) };
}

/** A client that sends `cookie` and no token. */
function cookieClient(cookie: string): ApiClient {
  const request: ApiClient["request"] = async (method, path, body) => {
    const headers: Record<string, string> = { Cookie: cookie };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(`${stack.baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : {}, headers: response.headers };
  };
  return {
    request,
    get: (path) => request("GET", path),
    post: (path, body) => request("POST", path, body),
    put: (path, body) => request("PUT", path, body),
    delete: (path, body) => request("DELETE", path, body),
  };
}

// ---------------------------------------------------------------- running an entry

const OPERATION_BY_KEY = new Map(OPERATIONS.map((op) => [operationKey(op.method, op.path), op] as const));
const ROUTE_KEYS = new Set([
  ...CORE_API_ROUTES.map((route) => operationKey(route.method, route.path)),
  ...OPERATION_BY_KEY.keys(),
]);

function fillPath(path: string, params: Record<string, string>): string {
  return path.replace(/\{(\w+)\}/g, (_match, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`the contract entry gives no value for {${name}} in ${path}`);
    return encodeURIComponent(value);
  });
}

/** A client that sends `extra` headers and no token; a string body goes as it is (a signed payload). */
function headerClient(extra: Record<string, string>): ApiClient {
  const request: ApiClient["request"] = async (method, path, body) => {
    const headers: Record<string, string> = { ...extra };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(`${stack.baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : {}, headers: response.headers };
  };
  return {
    request,
    get: (path) => request("GET", path),
    post: (path, body) => request("POST", path, body),
    put: (path, body) => request("PUT", path, body),
    delete: (path, body) => request("DELETE", path, body),
  };
}

function callerFor(operation: Operation | undefined, call: Call): ApiClient {
  if (call.cookie) return cookieClient(call.cookie);
  if (call.headers) return headerClient(call.headers);
  if (operation?.access.kind === "public") return stack.anonymous;
  if (operation?.access.kind === "systemAdmin") return f.systemAdmin.api;
  const as = call.as ?? f.owner;
  return as === "anonymous" ? stack.anonymous : as.api;
}

/** Operation ids answered with their declared status and schema. */
const answered = new Set<string>();

/** Statuses every operation may answer besides its declared `errors`. */
const COMMON_ERRORS = [400, 401, 429, 503];

/**
 * An error answer: `{message, ...}` with the status; when `key` names an operation, the status is
 * one it declares (its `errors`, or one every operation may answer).
 */
function expectErrorShape(response: { status: number; body: unknown }, status: number, key?: string) {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(isObject(response.body), JSON.stringify(response.body)).toBe(true);
  expect((response.body as Record<string, unknown>).message).toEqual(expect.any(String));
  const operation = key ? OPERATION_BY_KEY.get(key) : undefined;
  if (operation && status !== UNSUPPORTED)
    expect([...COMMON_ERRORS, ...operation.errors], `${operation.id} does not declare ${status}`).toContain(
      status,
    );
}

let processor: PaymentProcessor;
let payments: PaymentsEnvironment | undefined;
/** The team plan's price with the processor (STRIPE_PRICE_TEAM): Checkout and downgrades use it. */
const CONTRACT_TEAM_PRICE = "price_contract_team";

beforeAll(async () => {
  // The payment processor on loopback: a top-up charges the MSP's card.
  payments = await startPaymentsEnvironment({
    secretKey: "sk_test_contract",
    webhookSecret: STRIPE_WEBHOOK_SECRET,
    env: { STRIPE_PRICE_TEAM: CONTRACT_TEAM_PRICE },
  });
  processor = payments.processor;
  stack = await startTestStack();
  echo = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: true, path: req.url }));
    });
  });
  await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
  echoBase = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/base`;
  const redirectUri = `${stack.baseUrl}/webhooks/oauth2`;
  oauth = await startOAuthServer({
    clients: [
      {
        client_id: WEB_CLIENT,
        client_secret: WEB_SECRET,
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: "client_secret_basic",
      },
      serviceClient(SERVICE_CLIENT, SERVICE_SECRET, "api:read"),
    ],
  });

  const [owner, member, invitee, acceptor, leaver, removed, systemAdmin] = await Promise.all(
    Array.from({ length: 7 }, () => stack.newUser()),
  );
  const clientId = await createClientFor(owner!, "Contract Co");
  // The team plan's 1,000 calls a minute: the scenario makes a few hundred calls with one token.
  await setClientPlan(clientId, "team");
  await setSystemAdmin(systemAdmin!.userId, true);
  f = {
    owner: owner!,
    member: member!,
    invitee: invitee!,
    acceptor: acceptor!,
    leaver: leaver!,
    removed: removed!,
    systemAdmin: systemAdmin!,
    clientId,
  } as Fixtures;
  for (const user of [member!, leaver!, removed!]) await joinClient(owner!, clientId, user, "user");
  f.pendingInviteId = await invite(invitee!.email);
  f.acceptInviteId = await invite(acceptor!.email);
  f.mspId = (await createMsp({ name: "Contract MSP", ownerUserId: owner!.userId })).msp.mspId;
  processor.setDefaultPaymentMethod(
    (await storedItem(keys.mspConfig(f.mspId)))?.paymentCustomerId as string,
    "pm_card_visa",
  );
  f.mspClientId = await managedClient("Managed Co");
  const asAdmin = await owner!.api.put(
    `/api/msps/${f.mspId}/clients/${f.mspClientId}/members/${owner!.userId}`,
    {
      roles: ["admin"],
    },
  );
  expect(asAdmin.status, JSON.stringify(asAdmin.body)).toBe(200);
  f.mspStaff = await stack.newUser();
  await joinMsp(f.mspStaff, ["msp_user"]);
  f.mspInviteId = await mspInvite(invitee!.email);

  [f.proxyCredentialId, f.targetCredentialId, f.targetId] = await Promise.all([
    proxyCredential(),
    targetCredential(),
    target(),
  ]);
  const theProxy = await created(
    f.owner.api.post(`${client()}/proxies`, proxyBody(f.proxyCredentialId)),
    "proxies",
  );
  f.proxyId = theProxy.proxyId as string;
  f.meterProxyId = await proxy();
  f.meterId = await meter();
  [f.requestTransformId, f.responseTransformId] = await Promise.all([
    transform("request"),
    transform("response"),
  ]);
  const oauthCredential = await created(
    f.owner.api.post(`${client()}/credentials`, {
      credentialName: "service",
      credentialType: "target",
      authType: "oauth2",
      region: US,
      secret: {
        flow: "client_credentials",
        tokenUrl: oauth.tokenUrl,
        clientId: SERVICE_CLIENT,
        clientSecret: SERVICE_SECRET,
        scope: "api:read",
      },
    }),
    "credentials",
  );
  f.oauthCredentialId = oauthCredential.credentialId as string;

  // A real data-plane call through the proxy: its request log record.
  const forwarded = await callDataPlane(`${stack.regions[US]}/api/${f.proxyId}/hello`, {
    headers: { "x-api-key": callerKeys.get(f.proxyCredentialId) ?? "" },
  });
  expect(forwarded.status, forwarded.text).toBe(200);
  f.requestId = forwarded.headers.get("x-request-id") ?? "";
  expect(f.requestId).not.toBe("");

  f.systemNotificationId = String(
    (await createNotification({ kind: "system" }, { type: "system", title: "Contract", message: "Hello" }))
      .notificationId,
  );
  f.userNotificationId = String(
    (
      await createNotification(
        { kind: "user", userId: f.owner.userId },
        { type: "system", title: "Contract", message: "Hello" },
      )
    ).notificationId,
  );
  // A meter alert digest (type usage): its `data` is checked against the declared schema.
  const hour = Date.UTC(2026, 0, 1, 10);
  const digest = usageNotification({
    pKey: "",
    sKey: "",
    entity: "meterOccurrence",
    clientId,
    proxyId: f.meterProxyId,
    meterId: f.meterId,
    notifyTrigger: "exceed",
    cadence: "hour",
    periodStart: hour,
    periodEnd: hour + 3_600_000,
    occurrences: 2,
    minuteCount: 2,
    updatedAt: "",
    TTL: 0,
  });
  expect(await putNotificationIfAbsent(digest)).toBe(true);
  f.clientNotificationId = digest.notificationId;
});

afterAll(async () => {
  await payments?.stop();
  await closeOutboundAgents();
  await oauth?.close();
  echo?.closeAllConnections();
  await new Promise((resolve) => echo?.close(resolve));
  await stack?.stop();
});

describe("the contract table", () => {
  it("has an entry for every operation of the registry and every route of the Core API", () => {
    const missing = [...ROUTE_KEYS]
      .filter((key) => !Object.hasOwn(CONTRACT, key))
      .map((key) => {
        const operation = OPERATION_BY_KEY.get(key);
        return operation ? `${operation.id} (${key})` : key;
      });
    expect(missing, "add an entry to CONTRACT in test/e2e/contract.test.ts for each of these").toEqual([]);
  });

  it("has no entry for a route that does not exist", () => {
    expect(Object.keys(CONTRACT).filter((key) => !ROUTE_KEYS.has(key))).toEqual([]);
  });

  it("agrees with each operation's declared success status", () => {
    const disagree = [...OPERATION_BY_KEY]
      .filter(([key]) => CONTRACT[key] && CONTRACT[key].status !== UNSUPPORTED)
      .filter(([key, op]) => CONTRACT[key]!.status !== op.response.status)
      .map(([key, op]) => `${op.id}: declares ${op.response.status}, answers ${CONTRACT[key]!.status} today`);
    expect(disagree).toEqual([]);
  });
});

describe("every route answers its declared contract", () => {
  for (const [key, entry] of Object.entries(CONTRACT)) {
    const operation = OPERATION_BY_KEY.get(key);
    const label = operation ? `${operation.id}: ${key}` : `${key} (not in the registry yet)`;
    it.skipIf(!ROUTE_KEYS.has(key))(label, async () => {
      const [method, path] = key.split(" ") as [string, string];
      const call = await entry.call(f);
      const query = call.query ? `?${new URLSearchParams(call.query)}` : "";
      const response = await callerFor(operation, call).request(
        method,
        `${fillPath(path, call.params ?? {})}${query}`,
        call.body,
      );
      if (entry.status === UNSUPPORTED) {
        // A route that only says what to use instead: 405, the error shape and Allow.
        expectErrorShape(response, UNSUPPORTED);
        expect(response.headers.get("allow")).toEqual(expect.any(String));
        if (operation) answered.add(operation.id);
        return;
      }
      expect(response.status, JSON.stringify(response.body)).toBe(entry.status);
      if (!entry.notEnvelope) {
        expect(isObject(response.body), JSON.stringify(response.body)).toBe(true);
        expect((response.body as Record<string, unknown>).message).toEqual(expect.any(String));
      }
      if (!operation) return;
      expect(response.status).toBe(operation.response.status);
      expect(strictProblems(operation.response.schema, response.body), JSON.stringify(response.body)).toEqual(
        [],
      );
      answered.add(operation.id);
    });
  }

  it("every operation of the registry was answered at least once", () => {
    expect(OPERATIONS.map((op) => op.id).filter((id) => !answered.has(id))).toEqual([]);
  });
});

describe("error answers have the error shape {message, ...}", () => {
  it("401 without a token", async () => {
    expectErrorShape(await stack.anonymous.get("/api/clients"), 401);
  });

  it("404 for an unknown resource, and for another organisation's", async () => {
    const getProxy = "GET /api/clients/{clientId}/proxies/{proxyId}";
    expectErrorShape(await f.owner.api.get(`${client()}/proxies/${randomUUID()}`), 404, getProxy);
    const outsider = await stack.newUser();
    expectErrorShape(await outsider.api.get(`${client()}/proxies/${f.proxyId}`), 404, getProxy);
  });

  it("403 for a member without the role", async () => {
    const response = await f.member.api.post(`${client()}/proxies`, proxyBody(f.proxyCredentialId));
    expectErrorShape(response, 403, "POST /api/clients/{clientId}/proxies");
  });

  it("400 naming the fields of an invalid body", async () => {
    const response = await f.owner.api.post(`${client()}/proxies`, {
      ...proxyBody(f.proxyCredentialId),
      proxyName: 5,
    });
    expectErrorShape(response, 400, "POST /api/clients/{clientId}/proxies");
    expect(response.body.fields).toContain("proxyName");
  });
});

describe("the strict check", () => {
  it("names an undeclared key at any depth, and accepts a declared open record", async () => {
    const { z: zod } = await import("zod");
    const schema = zod.object({
      message: zod.string(),
      items: zod.array(zod.object({ id: zod.string(), extra: zod.record(zod.string(), zod.unknown()) })),
    });
    expect(
      strictProblems(schema, {
        message: "m",
        items: [
          { id: "a", extra: { any: 1 } },
          { id: "b", extra: {}, entity: "x" },
        ],
      }),
    ).toEqual(["items[1].entity: not declared in the response schema"]);
    expect(strictProblems(schema, { message: "m", items: [{ id: 1, extra: {} }] })).toEqual([
      "items.0.id: Invalid input: expected string, received number",
    ]);
  });
});
