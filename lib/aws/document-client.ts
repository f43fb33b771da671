/**
 * The project's DynamoDB document client: plain JavaScript values in, plain values out, over the
 * low-level DynamoDBClient.
 *
 * Why not `@aws-sdk/lib-dynamodb`'s client: its marshaller decides a value's type from
 * `value.constructor.name` and builds maps with `map[key] = ...`. Stored maps hold names chosen by
 * users (request headers, query parameters, a proxy's additional headers and body data), so:
 * - an own key `constructor` (a header `Constructor: 1`) makes a map "an unsupported type" and the
 *   write fails; `{"constructor": {"name": "Set"}}` even makes a map pass for a Set;
 * - a key `__proto__` replaces the map's prototype instead of becoming an entry, and the request
 *   sent to DynamoDB is corrupt.
 *
 * Here the type of a value is decided by `typeof`, `Array.isArray` and `instanceof` (never by a
 * property the value itself can carry), maps are built on null-prototype objects on the way in and
 * with `Object.fromEntries` (own data properties) on the way out, so every key name is data. The
 * command classes keep lib-dynamodb's names and input/output types, so call sites read the same.
 * There is no Scan: every read is a GetItem or a Query on a key or index.
 */

import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand as QueryItemsCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type {
  BatchGetCommandInput,
  BatchGetCommandOutput,
  BatchWriteCommandInput,
  BatchWriteCommandOutput,
  DeleteCommandInput,
  DeleteCommandOutput,
  GetCommandInput,
  GetCommandOutput,
  NativeAttributeValue,
  PutCommandInput,
  PutCommandOutput,
  QueryCommandInput,
  QueryCommandOutput,
  TransactWriteCommandInput,
  TransactWriteCommandOutput,
  UpdateCommandInput,
  UpdateCommandOutput,
} from "@aws-sdk/lib-dynamodb";

export type {
  BatchGetCommandInput,
  BatchWriteCommandInput,
  DeleteCommandInput,
  GetCommandInput,
  NativeAttributeValue,
  PutCommandInput,
  QueryCommandInput,
  TransactWriteCommandInput,
  UpdateCommandInput,
};

/** DynamoDB's limit of nested maps and lists in one attribute. */
export const MAX_ATTRIBUTE_DEPTH = 32;

/** A value that DynamoDB cannot store (a class instance, a function, NaN, a nesting too deep). */
export class UnstorableValueError extends Error {
  override name = "UnstorableValueError";
}

type AttributeMap = Record<string, AttributeValue>;

const isStringKeyedRecord = (value: object): value is Record<string, unknown> => {
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
};

/** A null-prototype map: assigning any key, `__proto__` included, creates an own entry. */
const emptyMap = (): AttributeMap => Object.create(null) as AttributeMap;

function setAttribute(values: Set<unknown>, path: string): AttributeValue {
  if (values.size === 0) throw new UnstorableValueError(`${path}: an empty set cannot be stored`);
  const all = [...values];
  if (all.every((v) => typeof v === "string")) return { SS: all as string[] };
  if (all.every((v) => typeof v === "number" || typeof v === "bigint"))
    return { NS: all.map((v) => numberText(v as number | bigint, path)) };
  if (all.every((v) => v instanceof Uint8Array)) return { BS: all as Uint8Array[] };
  throw new UnstorableValueError(`${path}: a set must hold only strings, only numbers or only binary values`);
}

function numberText(value: number | bigint, path: string): string {
  if (typeof value === "number" && !Number.isFinite(value))
    throw new UnstorableValueError(`${path}: ${value} cannot be stored`);
  return String(value);
}

function mapEntries(entries: Iterable<[unknown, unknown]>, path: string, depth: number): AttributeValue {
  const map = emptyMap();
  for (const [key, value] of entries) {
    if (typeof key !== "string") throw new UnstorableValueError(`${path}: map keys must be strings`);
    const attribute = toAttribute(value, `${path}.${key}`, depth + 1);
    if (attribute !== undefined) map[key] = attribute;
  }
  return { M: map };
}

/** One JavaScript value as an AttributeValue; undefined (and only undefined) is left out. */
export function toAttribute(value: unknown, path = "value", depth = 0): AttributeValue | undefined {
  if (depth > MAX_ATTRIBUTE_DEPTH)
    throw new UnstorableValueError(`${path}: nested deeper than ${MAX_ATTRIBUTE_DEPTH} levels`);
  switch (typeof value) {
    case "undefined":
      return undefined;
    case "string":
      return { S: value };
    case "boolean":
      return { BOOL: value };
    case "number":
    case "bigint":
      return { N: numberText(value, path) };
    case "object":
      break;
    default:
      throw new UnstorableValueError(`${path}: a ${typeof value} cannot be stored`);
  }
  if (value === null) return { NULL: true };
  if (Array.isArray(value)) {
    const list: AttributeValue[] = [];
    value.forEach((item, index) => {
      const attribute = toAttribute(item, `${path}[${index}]`, depth + 1);
      if (attribute !== undefined) list.push(attribute);
    });
    return { L: list };
  }
  if (value instanceof Uint8Array) return { B: value };
  if (value instanceof Set) return setAttribute(value, path);
  if (value instanceof Map) return mapEntries(value.entries(), path, depth);
  if (isStringKeyedRecord(value)) return mapEntries(Object.entries(value), path, depth);
  throw new UnstorableValueError(`${path}: an instance of a class cannot be stored`);
}

/** An item (or key, or expression values) as a map of AttributeValues. */
export function marshallItem(item: Record<string, unknown>): AttributeMap {
  const map = emptyMap();
  for (const [key, value] of Object.entries(item)) {
    const attribute = toAttribute(value, key, 1);
    if (attribute !== undefined) map[key] = attribute;
  }
  return map;
}

/** One AttributeValue as a JavaScript value. Maps become objects whose every key is an own entry. */
export function fromAttribute(attribute: AttributeValue): NativeAttributeValue {
  if (attribute.S !== undefined) return attribute.S;
  if (attribute.N !== undefined) return Number(attribute.N);
  if (attribute.BOOL !== undefined) return attribute.BOOL;
  if (attribute.NULL !== undefined) return null;
  if (attribute.M !== undefined) return unmarshallItem(attribute.M);
  if (attribute.L !== undefined) return attribute.L.map(fromAttribute);
  if (attribute.B !== undefined) return attribute.B;
  if (attribute.SS !== undefined) return new Set(attribute.SS);
  if (attribute.NS !== undefined) return new Set(attribute.NS.map(Number));
  if (attribute.BS !== undefined) return new Set(attribute.BS);
  throw new UnstorableValueError(`Unknown attribute type ${Object.keys(attribute).join(",")}`);
}

export function unmarshallItem(map: AttributeMap): Record<string, NativeAttributeValue> {
  return Object.fromEntries(Object.entries(map).map(([key, value]) => [key, fromAttribute(value)]));
}

const marshallOptional = (item: Record<string, unknown> | undefined) =>
  item === undefined ? undefined : marshallItem(item);
const unmarshallOptional = (map: AttributeMap | undefined) =>
  map === undefined ? undefined : unmarshallItem(map);

// ---- commands: lib-dynamodb's names and types, plain data ----

abstract class DocumentCommand<Input, Output> {
  declare readonly output: Output;
  constructor(readonly input: Input) {}
}
export class GetCommand extends DocumentCommand<GetCommandInput, GetCommandOutput> {
  readonly kind = "get";
}
export class PutCommand extends DocumentCommand<PutCommandInput, PutCommandOutput> {
  readonly kind = "put";
}
export class UpdateCommand extends DocumentCommand<UpdateCommandInput, UpdateCommandOutput> {
  readonly kind = "update";
}
export class DeleteCommand extends DocumentCommand<DeleteCommandInput, DeleteCommandOutput> {
  readonly kind = "delete";
}
export class QueryCommand extends DocumentCommand<QueryCommandInput, QueryCommandOutput> {
  readonly kind = "query";
}
export class TransactWriteCommand extends DocumentCommand<
  TransactWriteCommandInput,
  TransactWriteCommandOutput
> {
  readonly kind = "transactWrite";
}
export class BatchGetCommand extends DocumentCommand<BatchGetCommandInput, BatchGetCommandOutput> {
  readonly kind = "batchGet";
}
export class BatchWriteCommand extends DocumentCommand<BatchWriteCommandInput, BatchWriteCommandOutput> {
  readonly kind = "batchWrite";
}

type AnyCommand =
  | GetCommand
  | PutCommand
  | UpdateCommand
  | DeleteCommand
  | QueryCommand
  | TransactWriteCommand
  | BatchGetCommand
  | BatchWriteCommand;

type Values = { ExpressionAttributeValues?: Record<string, unknown> };
const values = <T extends Values>(input: T) => ({
  ExpressionAttributeValues: marshallOptional(input.ExpressionAttributeValues),
});

// biome-ignore lint/suspicious/noExplicitAny: the low-level input types are structurally checked by send()
type Low = any;

function transactItem(action: NonNullable<TransactWriteCommandInput["TransactItems"]>[number]): Low {
  if (action.Put)
    return { Put: { ...action.Put, Item: marshallItem(action.Put.Item ?? {}), ...values(action.Put) } };
  if (action.Update)
    return {
      Update: { ...action.Update, Key: marshallItem(action.Update.Key ?? {}), ...values(action.Update) },
    };
  if (action.Delete)
    return {
      Delete: { ...action.Delete, Key: marshallItem(action.Delete.Key ?? {}), ...values(action.Delete) },
    };
  if (action.ConditionCheck)
    return {
      ConditionCheck: {
        ...action.ConditionCheck,
        Key: marshallItem(action.ConditionCheck.Key ?? {}),
        ...values(action.ConditionCheck),
      },
    };
  return action;
}

const mapRecord = <A, B>(record: Record<string, A> | undefined, f: (value: A) => B) =>
  record === undefined ? undefined : Object.fromEntries(Object.entries(record).map(([k, v]) => [k, f(v)]));

type WriteRequest = NonNullable<BatchWriteCommandInput["RequestItems"]>[string][number];
const writeRequestIn = (request: WriteRequest): Low => ({
  ...(request.PutRequest ? { PutRequest: { Item: marshallItem(request.PutRequest.Item ?? {}) } } : {}),
  ...(request.DeleteRequest ? { DeleteRequest: { Key: marshallItem(request.DeleteRequest.Key ?? {}) } } : {}),
});
const writeRequestOut = (request: Low): WriteRequest => ({
  ...(request.PutRequest ? { PutRequest: { Item: unmarshallItem(request.PutRequest.Item ?? {}) } } : {}),
  ...(request.DeleteRequest
    ? { DeleteRequest: { Key: unmarshallItem(request.DeleteRequest.Key ?? {}) } }
    : {}),
});

export interface DocumentClient {
  send<C extends AnyCommand>(command: C, options?: { abortSignal?: AbortSignal }): Promise<C["output"]>;
  /** The low-level client's middleware stack (the bench counts round trips there). */
  readonly middlewareStack: DynamoDBClient["middlewareStack"];
  destroy(): void;
}

export function documentClient(client: DynamoDBClient): DocumentClient {
  async function send(command: AnyCommand, options?: { abortSignal?: AbortSignal }): Promise<unknown> {
    switch (command.kind) {
      case "get": {
        const out = await client.send(
          new GetItemCommand({ ...command.input, Key: marshallItem(command.input.Key ?? {}) }),
          options,
        );
        return { ...out, Item: unmarshallOptional(out.Item) };
      }
      case "put": {
        const { input } = command;
        const out = await client.send(
          new PutItemCommand({ ...input, Item: marshallItem(input.Item ?? {}), ...values(input) } as Low),
          options,
        );
        return { ...out, Attributes: unmarshallOptional(out.Attributes) };
      }
      case "update": {
        const { input } = command;
        const out = await client.send(
          new UpdateItemCommand({ ...input, Key: marshallItem(input.Key ?? {}), ...values(input) } as Low),
          options,
        );
        return { ...out, Attributes: unmarshallOptional(out.Attributes) };
      }
      case "delete": {
        const { input } = command;
        const out = await client.send(
          new DeleteItemCommand({ ...input, Key: marshallItem(input.Key ?? {}), ...values(input) } as Low),
          options,
        );
        return { ...out, Attributes: unmarshallOptional(out.Attributes) };
      }
      case "query": {
        const { input } = command;
        const low = {
          ...input,
          ExclusiveStartKey: marshallOptional(input.ExclusiveStartKey),
          ...values(input),
        } as Low;
        const out = await client.send(new QueryItemsCommand(low), options);
        return {
          ...out,
          Items: out.Items?.map(unmarshallItem),
          LastEvaluatedKey: unmarshallOptional(out.LastEvaluatedKey),
        };
      }
      case "transactWrite":
        return client.send(
          new TransactWriteItemsCommand({
            ...command.input,
            TransactItems: command.input.TransactItems?.map(transactItem),
          } as Low),
          options,
        );
      case "batchGet": {
        const out = await client.send(
          new BatchGetItemCommand({
            ...command.input,
            RequestItems: mapRecord(command.input.RequestItems, (request) => ({
              ...request,
              Keys: request.Keys?.map(marshallItem),
            })),
          } as Low),
          options,
        );
        return {
          ...out,
          Responses: mapRecord(out.Responses, (items) => items.map(unmarshallItem)),
          UnprocessedKeys: mapRecord(out.UnprocessedKeys, (request) => ({
            ...request,
            Keys: request.Keys?.map(unmarshallItem),
          })),
        };
      }
      case "batchWrite": {
        const out = await client.send(
          new BatchWriteItemCommand({
            ...command.input,
            RequestItems: mapRecord(command.input.RequestItems, (requests) => requests.map(writeRequestIn)),
          } as Low),
          options,
        );
        return {
          ...out,
          UnprocessedItems: mapRecord(out.UnprocessedItems, (requests) => requests.map(writeRequestOut)),
        };
      }
    }
  }
  return {
    send: send as DocumentClient["send"],
    middlewareStack: client.middlewareStack,
    destroy: () => client.destroy(),
  };
}
