/**
 * The atomicity check of configuration changes (issue 20): every write of a client's regional
 * configuration item (proxy, locator, alias lock, credential, target, rule, meter, transform,
 * filters, overrides) must be a TransactWriteItems that also moves that client's `configVersion`
 * (lib/db/regional.ts `commitRegional`). Otherwise a warm data plane keeps serving the old
 * configuration when the separate version write fails, or when a new write path forgets it.
 *
 * `watchConfigWrites()` adds a middleware to every configured region's DynamoDB client of this
 * process (the local stack runs in-process in the tests) that records each offending write. The
 * test stack (test/support/stack.ts) installs it for every e2e file and fails the file at its end
 * when anything was recorded; test/e2e/config-atomicity.test.ts proves the check itself.
 *
 * A few writes to configuration items are the data plane's own state, not configuration, and are
 * allowed outside such a transaction, attribute set by attribute set: the single-use claim
 * (`usedAt`), the JWKS cache (`jwksCache`), refreshed OAuth2 tokens (`secretEnvelope`,
 * `oauthRefreshedAt`) and a meter's learned mean (`valueMean`). And a client whose traffic is
 * already stopped (its runtime item says `pendingDeletion`, written with a version move) may have
 * its partition deleted in batches by the purge. Test code that seeds configuration items directly
 * wraps that in `seedingConfig`.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { dynamo } from "#lib/aws/clients.ts";
import { GetCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { keys, REGIONAL_SK } from "#lib/db/keys.ts";
import { tableName } from "#lib/db/store.ts";

type AttributeValue = string | { S?: string } | undefined;
type Key = { pKey?: AttributeValue; sKey?: AttributeValue };
interface WriteAction {
  Key?: Key;
  Item?: Key;
  UpdateExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
}

const CONFIG_PREFIXES = Object.values(REGIONAL_SK);

/** Sets of attributes the data plane keeps on configuration items as its own state. */
const RUNTIME_STATE_UPDATES: readonly (readonly string[])[] = [
  ["usedAt"],
  ["jwksCache"],
  ["secretEnvelope", "oauthRefreshedAt"],
  ["valueMean"],
];

const text = (value: AttributeValue) => (typeof value === "string" ? value : value?.S);

/** The client id of a configuration item's key, or undefined for any other item. */
function configClientOf(key: Key | undefined): string | undefined {
  const pKey = text(key?.pKey);
  const sKey = text(key?.sKey);
  if (!pKey || !sKey) return undefined;
  if (pKey.startsWith("PROXYRT#")) return "(proxy locator)";
  if (!pKey.startsWith("CLIENT#") || sKey === "RUNTIME") return undefined;
  return CONFIG_PREFIXES.some((prefix) => sKey.startsWith(prefix)) ? pKey.slice(7) : undefined;
}

/** Top-level attribute names an UpdateExpression writes (SET, REMOVE, ADD, DELETE). */
export function updatedAttributes(expression: string, names: Record<string, string> = {}): string[] {
  const out = new Set<string>();
  const clauses = expression.split(/\b(SET|REMOVE|ADD|DELETE)\b/i).slice(1);
  for (let index = 0; index < clauses.length; index += 2) {
    const keyword = (clauses[index] ?? "").toUpperCase();
    const body = clauses[index + 1] ?? "";
    let depth = 0;
    let part = "";
    const parts: string[] = [];
    for (const char of body) {
      if (char === "(") depth++;
      if (char === ")") depth--;
      if (char === "," && depth === 0) {
        parts.push(part);
        part = "";
      } else part += char;
    }
    parts.push(part);
    for (const raw of parts) {
      const trimmed = raw.trim();
      if (!trimmed) continue;
      const path = keyword === "SET" ? (trimmed.split("=")[0] ?? "") : (trimmed.split(/\s+/)[0] ?? "");
      const top = path.trim().split(/[.[]/)[0] ?? "";
      out.add(names[top] ?? top);
    }
  }
  return [...out].sort();
}

const isRuntimeState = (action: WriteAction) =>
  action.UpdateExpression !== undefined &&
  RUNTIME_STATE_UPDATES.some((allowed) =>
    updatedAttributes(action.UpdateExpression ?? "", action.ExpressionAttributeNames).every((name) =>
      allowed.includes(name),
    ),
  );

const movesVersionOf = (clientId: string, action: WriteAction) =>
  text(action.Key?.pKey) === `CLIENT#${clientId}` &&
  text(action.Key?.sKey) === "RUNTIME" &&
  /\bADD\s+configVersion\b/.test(action.UpdateExpression ?? "");

/** Offending configuration writes of one command, described for a failure message. */
export function offendingWrites(command: string, input: Record<string, unknown>): string[] {
  const describe = (action: WriteAction) =>
    `${text(action.Key?.pKey ?? action.Item?.pKey)} ${text(action.Key?.sKey ?? action.Item?.sKey)}`;
  if (command === "TransactWriteItemsCommand") {
    const actions = ((input.TransactItems ?? []) as Record<string, WriteAction | undefined>[]).map(
      (entry) => entry.Put ?? entry.Update ?? entry.Delete,
    );
    const writes = actions.filter((action): action is WriteAction => action !== undefined);
    return writes.flatMap((action) => {
      const clientId = configClientOf(action.Key ?? action.Item);
      if (!clientId || isRuntimeState(action)) return [];
      // A locator is written with its proxy, whose key names the client.
      const clients =
        clientId === "(proxy locator)"
          ? writes
              .map((other) => configClientOf(other.Key ?? other.Item))
              .filter((id) => id && id !== clientId)
          : [clientId];
      const versioned =
        clients.length > 0 &&
        clients.every((id) => writes.some((other) => movesVersionOf(id as string, other)));
      return versioned ? [] : [`TransactWriteItems without the configVersion step: ${describe(action)}`];
    });
  }
  if (command === "BatchWriteItemCommand") {
    const requests = Object.values(
      (input.RequestItems ?? {}) as Record<string, Record<string, { Key?: Key; Item?: Key }>[]>,
    ).flat();
    return requests.flatMap((request) => {
      const key = request.DeleteRequest?.Key ?? request.PutRequest?.Item;
      return configClientOf(key) ? [`BatchWriteItem of a configuration item: ${describe({ Key: key })}`] : [];
    });
  }
  if (command === "PutItemCommand" || command === "UpdateItemCommand" || command === "DeleteItemCommand") {
    const action = input as WriteAction;
    if (!configClientOf(action.Key ?? action.Item) || isRuntimeState(action)) return [];
    return [
      `${command.replace(/Command$/, "")} of a configuration item outside a transaction: ${describe(action)}`,
    ];
  }
  return [];
}

const seeding = new AsyncLocalStorage<true>();

/** Run test code that writes configuration items straight to the store (fixtures). */
export const seedingConfig = <T>(seed: () => Promise<T>): Promise<T> => seeding.run(true, seed);

/** The batch deletes of configuration items whose client's traffic is not stopped. */
async function unstoppedBatchDeletes(region: string, input: Record<string, unknown>): Promise<string[]> {
  const requests = Object.values(
    (input.RequestItems ?? {}) as Record<string, Record<string, { Key?: Key; Item?: Key }>[]>,
  ).flat();
  const out: string[] = [];
  for (const request of requests) {
    const key = request.DeleteRequest?.Key ?? request.PutRequest?.Item;
    let clientId = configClientOf(key);
    if (!clientId) continue;
    const get = async (pKey: string, sKey: string) =>
      (await dynamo(region).send(new GetCommand({ TableName: tableName(), Key: { pKey, sKey } }))).Item;
    if (clientId === "(proxy locator)") {
      const locator = await get(text(key?.pKey) ?? "", "RUNTIME");
      clientId = typeof locator?.clientId === "string" ? locator.clientId : undefined;
    }
    const runtime = clientId ? await get(keys.clientRuntime(clientId).pKey, "RUNTIME") : undefined;
    if (request.DeleteRequest && runtime?.clientStatus === "pendingDeletion") continue;
    out.push(
      `BatchWriteItem of a configuration item of a client still serving: ${text(key?.pKey)} ${text(key?.sKey)}`,
    );
  }
  return out;
}

/** The SDK middleware stack, as far as these watchers use it. */
export type MiddlewareStack = {
  add: (m: unknown, o: { step: string; name: string }) => void;
  remove: (n: string) => boolean;
};

/** Watch every configured region's client; `offences` lists what was written outside the rule. */
export function watchConfigWrites(options: { seeing?: "everything" } = {}) {
  const offences: string[] = [];
  const name = `config-atomicity-${Math.random().toString(36).slice(2)}`;
  const middleware =
    (region: string) =>
    (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
    async (args: unknown) => {
      if (seeding.getStore() && options.seeing !== "everything") return next(args);
      const input = (args as { input?: Record<string, unknown> }).input ?? {};
      const command = context.commandName ?? "";
      offences.push(
        ...(command === "BatchWriteItemCommand"
          ? await unstoppedBatchDeletes(region, input)
          : offendingWrites(command, input)),
      );
      return next(args);
    };
  const stacks = getConfig().regions.map((region) => {
    const stack = dynamo(region).middlewareStack as unknown as MiddlewareStack;
    stack.add(middleware(region), { step: "initialize", name });
    return stack;
  });
  return {
    offences,
    stop: () => {
      for (const stack of stacks) stack.remove(name);
    },
  };
}
