/**
 * OAuth2 target credentials of the authorization_code and PKCE flows (spec 2.5, 4.5, 6.2).
 *
 * Lifecycle (spec: "not shown", designed here): creating such a credential stores it as
 * *temporary* (hidden from lists unless includeTemporary=true, expiring after an hour through
 * TTL) and answers with the provider's authorization URL. A single-use `state` record in the home
 * table (15 minutes) points back to the credential. When the provider redirects the user to
 * `{base_url}/webhooks/oauth2?code&state`, the state is consumed by a conditional delete (so it
 * works once), the code is exchanged (with the PKCE verifier, which was kept encrypted inside the
 * credential's secret), the tokens are encrypted into the secret, and the credential becomes
 * permanent. The data plane refreshes the access token with the refresh token when it expires.
 */
import { randomBytes } from "node:crypto";
import { DeleteCommand, UpdateCommand } from "#lib/aws/document-client.ts";
import { commitRegional } from "#lib/db/commit.ts";
import { keys } from "#lib/db/keys.ts";
import { getInRegion } from "#lib/db/regional.ts";
import {
  homeDb,
  type Item,
  isConditionalCheckFailure,
  nowIso,
  nowSeconds,
  tableName,
} from "#lib/db/store.ts";
import { log } from "#lib/log.ts";
import { badRequest, upstreamFailed } from "#lib/shared/errors.ts";
import { decryptSecret, encryptSecret, type SecretEnvelope } from "#lib/vault/envelope.ts";
import {
  buildAuthorizationUrl,
  createPkcePair,
  exchangeAuthorizationCode,
  OAuthError,
} from "#lib/vault/oauth2.ts";
import type { OAuth2Secret } from "#lib/vault/secret-schemas.ts";
import { refuseWhileBillingSuspended } from "./billing-suspension.ts";

export const OAUTH_STATE_TTL_SECONDS = 15 * 60;
export const OAUTH_CALLBACK_PATH = "/webhooks/oauth2";

/** The stored secret of an authorization-code credential: the configuration plus the flow's state. */
export type StoredOAuth2Secret = OAuth2Secret & {
  pkceVerifier?: string;
  redirectUri?: string;
  accessToken?: string;
  refreshToken?: string;
  expiresAt?: number | null;
};

/** A stored OAuth2 secret of an authorization flow without a field that flow needs (a defect). */
function refusedSecret(field: string): never {
  throw new Error(`The OAuth2 secret of an authorization flow has no ${field}`);
}

export const needsAuthorization = (authType: string, secret: Record<string, unknown>) =>
  authType === "oauth2" && (secret.flow === "authorization_code" || secret.flow === "pkce");

/**
 * Prepare an authorization: the secret to store (with the PKCE verifier and redirect URI), the
 * URL to send the user to, and the state record to write once the credential is stored.
 */
export function prepareAuthorization(secret: OAuth2Secret, baseUrl: string) {
  const state = randomBytes(32).toString("base64url");
  const redirectUri = `${baseUrl}${OAUTH_CALLBACK_PATH}`;
  const pkce = secret.flow === "pkce" ? createPkcePair() : undefined;
  const authorizationUrl = buildAuthorizationUrl({
    authorizationUrl: secret.authorizationUrl ?? refusedSecret("authorizationUrl"),
    clientId: secret.clientId,
    redirectUri,
    scope: secret.scope,
    state,
    codeChallenge: pkce?.challenge,
    audience: secret.audience,
  });
  const storedSecret: StoredOAuth2Secret = {
    ...secret,
    redirectUri,
    ...(pkce ? { pkceVerifier: pkce.verifier } : {}),
  };
  return { state, authorizationUrl, storedSecret };
}

/**
 * Where the provider's redirect sends the browser once the flow ends: `console` when the console
 * (a session, not an API token) created the credential, to its page there; otherwise the JSON answer.
 */
export type AuthorizationReturn = "console" | "api";

export async function saveAuthorizationState(
  state: string,
  ref: { clientId: string; credentialId: string; region: string; returnTo?: AuthorizationReturn },
): Promise<void> {
  await homeDb().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.oauthState(state),
      UpdateExpression:
        "SET entity = :e, clientId = :c, credentialId = :id, #region = :r, returnTo = :to, createdAt = :now, #ttl = :ttl",
      ConditionExpression: "attribute_not_exists(pKey)",
      ExpressionAttributeNames: { "#region": "region", "#ttl": "TTL" },
      ExpressionAttributeValues: {
        ":e": "oauthState",
        ":c": ref.clientId,
        ":id": ref.credentialId,
        ":r": ref.region,
        ":to": ref.returnTo ?? "api",
        ":now": nowIso(),
        ":ttl": nowSeconds() + OAUTH_STATE_TTL_SECONDS,
      },
    }),
  );
}

/** Consume a state exactly once: a conditional delete that also refuses an expired one. */
async function consumeState(state: string): Promise<Item> {
  try {
    const result = await homeDb().send(
      new DeleteCommand({
        TableName: tableName(),
        Key: keys.oauthState(state),
        ConditionExpression: "attribute_exists(pKey) AND #ttl > :now",
        ExpressionAttributeNames: { "#ttl": "TTL" },
        ExpressionAttributeValues: { ":now": nowSeconds() },
        ReturnValues: "ALL_OLD",
      }),
    );
    return result.Attributes as Item;
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw badRequest("Unknown, used or expired OAuth2 state");
    throw error;
  }
}

export interface CallbackQuery {
  state?: string;
  code?: string;
  error?: string;
  error_description?: string;
}

/** The consumed state of a flow: the credential it authorizes and where the flow returns. */
export interface AuthorizationState {
  clientId: string;
  credentialId: string;
  region: string;
  returnTo: AuthorizationReturn;
}

/**
 * The first step of the provider's redirect: the state, consumed (it works once, whatever follows).
 * An unknown, used or expired state is a 400: nothing tells which credential it was for.
 */
export async function consumeAuthorizationState(query: CallbackQuery): Promise<AuthorizationState> {
  if (!query.state || query.state.length > 256) throw badRequest("The OAuth2 state is missing");
  const state = await consumeState(query.state);
  return {
    clientId: String(state.clientId),
    credentialId: String(state.credentialId),
    region: String(state.region),
    // States saved before the console's flow existed have none: they answer JSON, as then.
    returnTo: state.returnTo === "console" ? "console" : "api",
  };
}

/** Handle the provider's redirect; returns the credential item made permanent. */
export async function completeAuthorization(query: CallbackQuery): Promise<Item> {
  return finishAuthorization(await consumeAuthorizationState(query), query);
}

/**
 * The rest of the redirect, after its state was consumed: the provider's refusal is a 400, the
 * code is exchanged (a refused exchange is a 502) and the credential becomes permanent.
 */
export async function finishAuthorization(state: AuthorizationState, query: CallbackQuery): Promise<Item> {
  if (query.error) {
    throw badRequest(`The authorization was not granted: ${query.error.slice(0, 100)}`);
  }
  if (!query.code || query.code.length > 4096) throw badRequest("The OAuth2 code is missing");
  const { clientId, credentialId, region } = state;
  const key = keys.credential(clientId, credentialId);
  const credential = await getInRegion(region, key);
  if (credential?.credentialTemporary !== true || credential.deletingAt)
    throw badRequest("The credential of this authorization no longer waits for it");

  // A suspended organisation's code is not exchanged (402, as its proxies): nothing is sent.
  await refuseWhileBillingSuspended(clientId, region);
  const context = { region, clientId, credentialId };
  const secret = await decryptSecret<StoredOAuth2Secret>(
    credential.secretEnvelope as SecretEnvelope,
    context,
  );
  let tokens: Awaited<ReturnType<typeof exchangeAuthorizationCode>>;
  try {
    tokens = await exchangeAuthorizationCode({
      tokenUrl: secret.tokenUrl,
      clientId: secret.clientId,
      clientSecret: secret.clientSecret,
      tokenAuthMethod: secret.clientSecret ? secret.tokenAuthMethod : "none",
      code: query.code,
      redirectUri: secret.redirectUri ?? refusedSecret("redirectUri"),
      codeVerifier: secret.pkceVerifier,
    });
  } catch (error) {
    if (error instanceof OAuthError) {
      log.warn("OAuth2 code exchange failed", {
        clientId,
        credentialId,
        status: error.status,
        error: error.error,
      });
      throw upstreamFailed(`The provider refused the code exchange: ${error.message}`);
    }
    throw error;
  }
  const { pkceVerifier: _used, ...rest } = secret;
  const stored: StoredOAuth2Secret = {
    ...rest,
    accessToken: tokens.accessToken,
    ...(tokens.refreshToken ? { refreshToken: tokens.refreshToken } : {}),
    expiresAt: tokens.expiresAt,
  };
  const envelope = await encryptSecret({ ...context, secret: stored });
  const refused = () => badRequest("The credential of this authorization no longer waits for it");
  await commitRegional(
    region,
    clientId,
    [
      {
        name: "authorize",
        action: {
          Update: {
            TableName: tableName(),
            Key: key,
            UpdateExpression:
              "SET secretEnvelope = :env, credentialUpdatedAt = :now, oauthAuthorizedAt = :now REMOVE credentialTemporary, #ttl",
            ConditionExpression: "credentialTemporary = :true AND attribute_not_exists(deletingAt)",
            ExpressionAttributeNames: { "#ttl": "TTL" },
            ExpressionAttributeValues: { ":env": envelope, ":now": nowIso(), ":true": true },
          },
        },
      },
    ],
    refused,
  );
  const authorized = await getInRegion(region, key);
  if (!authorized) throw refused();
  return authorized;
}
