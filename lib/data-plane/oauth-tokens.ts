/**
 * Access tokens of oauth2 target credentials for the data plane.
 *
 * client_credentials: fetched from the token endpoint and kept in memory until a minute before
 * they expire (concurrent requests share one fetch). authorization_code / PKCE: the tokens
 * obtained at authorization are in the encrypted secret; an expiring access token is refreshed
 * with the refresh token and the new tokens are encrypted back onto the credential.
 *
 * Other warm functions refresh too, and the secret a function loaded with the proxy's
 * configuration is not reloaded after a refresh (it does not change the client's configVersion).
 * So before refreshing, the tokens stored on the credential are read again: another function may
 * have refreshed them already, and a provider that rotates refresh tokens refuses the old one
 * (oidc-provider, Auth0, Okta... even revoke the whole grant when a rotated one is used again).
 */

import { dynamo } from "#lib/aws/clients.ts";
import { GetCommand, UpdateCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import { tableName } from "#lib/db/store.ts";
import type { StoredOAuth2Secret } from "#lib/domain/oauth2-flow.ts";
import { describeError, log } from "#lib/log.ts";
import { decryptSecretCached, encryptSecret, type SecretEnvelope } from "#lib/vault/envelope.ts";
import {
  fetchClientCredentialsToken,
  isExpiring,
  type OAuthTokenSet,
  refreshAccessToken,
} from "#lib/vault/oauth2.ts";
import type { LoadedCredential } from "./runtime-config.ts";

const tokens = new Map<string, OAuthTokenSet>();
const inflight = new Map<string, Promise<OAuthTokenSet>>();

export function clearOAuthTokenCache(): void {
  tokens.clear();
  inflight.clear();
}

function once(key: string, fetch: () => Promise<OAuthTokenSet>): Promise<OAuthTokenSet> {
  const running = inflight.get(key);
  if (running) return running;
  const promise = fetch()
    .then((set) => {
      tokens.set(key, set);
      return set;
    })
    .finally(() => inflight.delete(key));
  inflight.set(key, promise);
  return promise;
}

/** The access and refresh tokens of an authorization-code secret, if it has been authorized. */
function tokensOf(secret: StoredOAuth2Secret): OAuthTokenSet | undefined {
  return secret.accessToken
    ? {
        accessToken: secret.accessToken,
        tokenType: "Bearer",
        expiresAt: secret.expiresAt ?? null,
        ...(secret.refreshToken ? { refreshToken: secret.refreshToken } : {}),
      }
    : undefined;
}

/** The secret as stored on the credential now (undefined when the credential is gone). */
async function storedSecret(
  region: string,
  clientId: string,
  credentialId: string,
): Promise<StoredOAuth2Secret | undefined> {
  const result = await dynamo(region).send(
    new GetCommand({
      TableName: tableName(),
      Key: keys.credential(clientId, credentialId),
      ProjectionExpression: "secretEnvelope",
      ConsistentRead: true,
    }),
  );
  const envelope = result.Item?.secretEnvelope as SecretEnvelope | undefined;
  if (!envelope) return undefined;
  return decryptSecretCached<StoredOAuth2Secret>(envelope, { region, clientId, credentialId });
}

/** The later of two token sets of one grant (a refresh only ever moves the expiry forward). */
const later = (a: OAuthTokenSet, b: OAuthTokenSet) =>
  (a.expiresAt ?? Infinity) >= (b.expiresAt ?? Infinity) ? a : b;

export async function currentOAuthToken(region: string, credential: LoadedCredential): Promise<string> {
  const secret = credential.secret as StoredOAuth2Secret;
  const { clientId, credentialId } = credential.item;
  const key = `${clientId}/${credentialId}`;
  const cached = tokens.get(key);
  if (cached && !isExpiring(cached)) return cached.accessToken;

  if (secret.flow === "client_credentials") {
    const set = await once(key, () =>
      fetchClientCredentialsToken({
        tokenUrl: secret.tokenUrl,
        clientId: secret.clientId,
        clientSecret: secret.clientSecret ?? "",
        tokenAuthMethod: secret.tokenAuthMethod,
        scope: secret.scope,
        audience: secret.audience,
        extraTokenParams: secret.extraTokenParams,
      }),
    );
    return set.accessToken;
  }

  const current = cached ?? tokensOf(secret);
  if (!current) throw new Error("The OAuth2 credential has not been authorized");
  if (!isExpiring(current) || !current.refreshToken) {
    tokens.set(key, current);
    return current.accessToken;
  }
  const set = await once(key, async () => {
    // Another warm function may have refreshed (and the provider rotated the refresh token) since
    // this one loaded the credential: start from the newer of the stored and the known tokens.
    const latest = (await storedSecret(region, clientId, credentialId)) ?? secret;
    const latestTokens = tokensOf(latest);
    const newest = latestTokens ? later(latestTokens, current) : current;
    if (!isExpiring(newest) || !newest.refreshToken) return newest;
    const refreshToken = newest.refreshToken;
    const refreshed = await refreshAccessToken({
      tokenUrl: latest.tokenUrl,
      clientId: latest.clientId,
      clientSecret: latest.clientSecret,
      tokenAuthMethod: latest.clientSecret ? latest.tokenAuthMethod : "none",
      refreshToken,
    });
    // Keep the new tokens: encrypted onto the credential, for every other warm function too.
    // The refresh has happened (a rotated refresh token is used up), so a failed write must not
    // fail the request nor lose the new tokens: they stay in memory and the write is logged.
    const next: StoredOAuth2Secret = {
      ...latest,
      accessToken: refreshed.accessToken,
      refreshToken: refreshed.refreshToken ?? refreshToken,
      expiresAt: refreshed.expiresAt,
    };
    try {
      const envelope = await encryptSecret({ region, clientId, credentialId, secret: next });
      await dynamo(region).send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.credential(clientId, credentialId),
          UpdateExpression: "SET secretEnvelope = :env, oauthRefreshedAt = :now",
          ConditionExpression: "attribute_exists(pKey)",
          ExpressionAttributeValues: { ":env": envelope, ":now": new Date().toISOString() },
        }),
      );
    } catch (error) {
      log.warn("Refreshed OAuth2 tokens could not be stored", {
        ...describeError(error),
        clientId,
        credentialId,
      });
    }
    return refreshed;
  });
  return set.accessToken;
}
