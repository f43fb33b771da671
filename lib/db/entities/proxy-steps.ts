/**
 * The proxy's write steps (lib/db/entities/proxy.ts is its schema, keys and reads): the named
 * TransactWriteItems actions that lib/domain/proxies.ts and the cascade commit through
 * lib/db/commit.ts. Kept apart from proxy.ts, which the data plane loads at its cold start.
 */
import { keys } from "../keys.ts";
import { type TransactionStep, tableName } from "../store.ts";
import type { ProxyItem } from "./proxy.ts";

/** The fields of a proxy that link it to a credential or target. */
export type LinkField = "proxyProxyCredentialId" | "proxyTargetId" | "proxyTargetCredentialId";
export const LINK_FIELDS: readonly LinkField[] = [
  "proxyProxyCredentialId",
  "proxyTargetId",
  "proxyTargetCredentialId",
];

/** Step names, read back when a transaction is cancelled (a link's check is named after its field). */
export const PROXY_STEPS = {
  claimAlias: "claim alias",
  releaseAlias: "release alias",
  writeProxy: "write proxy",
  writeLocator: "write locator",
  updateProxy: "update proxy",
  deleteProxy: "delete proxy",
  deleteLocator: "delete locator",
} as const;

/** The key of what a link field points to. */
export const keyOfLink = (clientId: string, field: LinkField, id: string) =>
  field === "proxyTargetId" ? keys.target(clientId, id) : keys.credential(clientId, id);

/** Checks (named after the link field) that keep the links valid at the moment the proxy is written. */
export const linkChecks = (clientId: string, links: readonly [LinkField, string][]): TransactionStep[] =>
  links.map(([field, id]) => ({
    name: field,
    action: {
      ConditionCheck: {
        TableName: tableName(),
        Key: keyOfLink(clientId, field, id),
        ConditionExpression: "attribute_exists(pKey) AND attribute_not_exists(deletingAt)",
      },
    },
  }));

/** Claim an alias in the client (one proxy per alias). */
export const claimAlias = (clientId: string, alias: string, proxyId: string): TransactionStep => ({
  name: PROXY_STEPS.claimAlias,
  action: {
    Put: {
      TableName: tableName(),
      Item: { ...keys.proxyAlias(clientId, alias), entity: "proxyAlias", proxyId, clientId },
      ConditionExpression: "attribute_not_exists(pKey)",
    },
  },
});

/** Release an alias only while this proxy holds it (it may since belong to another proxy). */
export const releaseAlias = (clientId: string, alias: string, proxyId: string): TransactionStep => ({
  name: PROXY_STEPS.releaseAlias,
  action: {
    Delete: {
      TableName: tableName(),
      Key: keys.proxyAlias(clientId, alias),
      ConditionExpression: "attribute_not_exists(pKey) OR proxyId = :id",
      ExpressionAttributeValues: { ":id": proxyId },
    },
  },
});

/** A new proxy and its data-plane locator (proxy id -> client id). */
export const putProxy = (proxy: ProxyItem): TransactionStep[] => [
  {
    name: PROXY_STEPS.writeProxy,
    action: {
      Put: { TableName: tableName(), Item: proxy, ConditionExpression: "attribute_not_exists(pKey)" },
    },
  },
  {
    name: PROXY_STEPS.writeLocator,
    action: {
      Put: {
        TableName: tableName(),
        Item: {
          ...keys.proxyRuntime(proxy.proxyId),
          entity: "proxyLocator",
          proxyId: proxy.proxyId,
          clientId: proxy.clientId,
        },
        ConditionExpression: "attribute_not_exists(pKey)",
      },
    },
  },
];

/**
 * Set `changes` (an alias set to null is removed), stamp `proxyUpdatedAt` and move `proxyVersion`,
 * only while the proxy is still the version the change was decided from and not being deleted.
 */
export function updateProxy(
  clientId: string,
  proxyId: string,
  changes: Record<string, unknown>,
  version: number,
  now: string,
): TransactionStep {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ":now": now, ":one": 1, ":version": version };
  const sets = ["proxyUpdatedAt = :now"];
  const removes: string[] = [];
  Object.entries(changes).forEach(([field, value], index) => {
    names[`#f${index}`] = field;
    if (field === "proxyAlias" && value === null) {
      removes.push(`#f${index}`);
      return;
    }
    values[`:v${index}`] = value;
    sets.push(`#f${index} = :v${index}`);
  });
  return {
    name: PROXY_STEPS.updateProxy,
    action: {
      Update: {
        TableName: tableName(),
        Key: keys.proxy(clientId, proxyId),
        UpdateExpression: `SET ${sets.join(", ")} ADD proxyVersion :one${removes.length ? ` REMOVE ${removes.join(", ")}` : ""}`,
        ConditionExpression:
          "attribute_exists(pKey) AND attribute_not_exists(deletingAt) AND (proxyVersion = :version OR attribute_not_exists(proxyVersion))",
        ExpressionAttributeNames: Object.keys(names).length ? names : undefined,
        ExpressionAttributeValues: values,
      },
    },
  };
}

/** Delete a proxy and its locator (its children and alias are other steps). */
export const deleteProxy = (clientId: string, proxyId: string): TransactionStep[] => [
  {
    name: PROXY_STEPS.deleteProxy,
    action: { Delete: { TableName: tableName(), Key: keys.proxy(clientId, proxyId) } },
  },
  {
    name: PROXY_STEPS.deleteLocator,
    action: { Delete: { TableName: tableName(), Key: keys.proxyRuntime(proxyId) } },
  },
];
