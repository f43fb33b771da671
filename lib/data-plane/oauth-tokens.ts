/**
 * Access tokens of oauth2 target credentials for the data plane.
 *
 * client_credentials: fetched from the token endpoint and kept in memory until a minute before
 * they expire (concurrent requests share one fetch). authorization_code / PKCE: the tokens
 * obtained at authorization are in the encrypted secret; an expiring access token is refreshed
 * with the refresh token and the new tokens are encrypted back onto the credential.
 */
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.ts";
import { keys } from "../db/keys.ts";
import { tableName } from "../db/store.ts";
import type { StoredOAuth2Secret } from "../domain/oauth2-flow.ts";
import { encryptSecret } from "../vault/envelope.ts";
import {
  fetchClientCredentialsToken,
  isExpiring,
  type OAuthTokenSet,
  refreshAccessToken,
} from "../vault/oauth2.ts";
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

export async function currentOAuthToken(region: string, credential: LoadedCredential): Promise<string> {
  const secret = credential.secret as StoredOAuth2Secret;
  const clientId = String(credential.item.clientId);
  const credentialId = String(credential.item.credentialId);
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

  const stored: OAuthTokenSet | undefined = secret.accessToken
    ? {
        accessToken: secret.accessToken,
        tokenType: "Bearer",
        expiresAt: secret.expiresAt ?? null,
        ...(secret.refreshToken ? { refreshToken: secret.refreshToken } : {}),
      }
    : undefined;
  const current = cached ?? stored;
  if (!current) throw new Error("The OAuth2 credential has not been authorized");
  if (!isExpiring(current) || !current.refreshToken) {
    tokens.set(key, current);
    return current.accessToken;
  }
  const refreshToken = current.refreshToken;
  const set = await once(key, async () => {
    const refreshed = await refreshAccessToken({
      tokenUrl: secret.tokenUrl,
      clientId: secret.clientId,
      clientSecret: secret.clientSecret,
      tokenAuthMethod: secret.clientSecret ? secret.tokenAuthMethod : "none",
      refreshToken,
    });
    // Keep the new tokens: encrypted onto the credential, for every other warm function too.
    const next: StoredOAuth2Secret = {
      ...secret,
      accessToken: refreshed.accessToken,
      refreshToken: refreshed.refreshToken ?? refreshToken,
      expiresAt: refreshed.expiresAt,
    };
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
    return refreshed;
  });
  return set.accessToken;
}
