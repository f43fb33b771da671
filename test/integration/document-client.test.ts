/**
 * The project's document client (lib/aws/document-client.ts) against the emulator: maps whose keys
 * are chosen by users (header names, query parameters, body data) are stored and read back exactly,
 * whatever the key: `constructor`, `__proto__`, `toString`, `hasOwnProperty`. lib-dynamodb's
 * marshaller refused the first and silently corrupted the second.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import {
  BatchGetCommand,
  BatchWriteCommand,
  GetCommand,
  marshallItem,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UnstorableValueError,
  UpdateCommand,
} from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { provisionTable } from "#local/provision.ts";

const REGION = "us-east-1";
const table = () => getConfig().tableName;
const db = () => dynamo(REGION);

const HOSTILE_KEYS = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "prototype"];
/** What JSON.parse makes of a body with every hostile key, nested too (own properties, `__proto__` included). */
const hostile = () =>
  JSON.parse(
    `{${HOSTILE_KEYS.map((k) => `"${k}":"${k}-value"`).join(",")},"nested":{"__proto__":{"constructor":{"name":"Set"}},"list":[{"constructor":1}]}}`,
  ) as Record<string, unknown>;

const get = async (pKey: string) =>
  (await db().send(new GetCommand({ TableName: table(), Key: { pKey, sKey: "A" } }))).Item;

beforeAll(async () => {
  await provisionTable(REGION, table());
});

describe("document client", () => {
  it("stores and reads back maps with any key name, as own entries", async () => {
    const pKey = `DOC#${randomUUID()}`;
    await db().send(new PutCommand({ TableName: table(), Item: { pKey, sKey: "A", data: hostile() } }));
    const item = await get(pKey);
    expect(JSON.stringify(item?.data)).toBe(JSON.stringify(hostile()));
    for (const key of HOSTILE_KEYS) {
      expect(Object.hasOwn(item?.data, key)).toBe(true);
      expect(item?.data[key]).toBe(`${key}-value`);
    }
    // `__proto__` is data, not the prototype: the object is an ordinary one.
    expect(Object.getPrototypeOf(item?.data)).toBe(Object.prototype);
    const nested = item?.data.nested;
    expect(Object.getOwnPropertyNames(nested)).toEqual(["__proto__", "list"]);
    // A map that names its "constructor" Set is still a map.
    expect(Object.getOwnPropertyDescriptor(nested, "__proto__")?.value).toEqual({
      constructor: { name: "Set" },
    });
  });

  it("writes hostile keys through updates, transactions and batches", async () => {
    const pKey = `DOC#${randomUUID()}`;
    await db().send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: table(), Item: { pKey, sKey: "A", headers: { Constructor: "1" } } } },
        ],
      }),
    );
    await db().send(
      new UpdateCommand({
        TableName: table(),
        Key: { pKey, sKey: "A" },
        UpdateExpression: "SET #q = :q",
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeNames: { "#q": "query" },
        ExpressionAttributeValues: { ":q": hostile() },
        ReturnValues: "ALL_NEW",
      }),
    );
    const item = await get(pKey);
    expect(item?.headers).toEqual({ Constructor: "1" });
    expect(JSON.stringify(item?.query)).toBe(JSON.stringify(hostile()));

    const other = `DOC#${randomUUID()}`;
    await db().send(
      new BatchWriteCommand({
        RequestItems: {
          [table()]: [
            { PutRequest: { Item: { pKey: other, sKey: "A", m: JSON.parse('{"__proto__":"x"}') } } },
          ],
        },
      }),
    );
    const batch = await db().send(
      new BatchGetCommand({ RequestItems: { [table()]: { Keys: [{ pKey: other, sKey: "A" }] } } }),
    );
    expect(Object.hasOwn(batch.Responses?.[table()]?.[0]?.m, "__proto__")).toBe(true);
    expect(Object.getOwnPropertyDescriptor(batch.Responses?.[table()]?.[0]?.m, "__proto__")?.value).toBe("x");
    const query = await db().send(
      new QueryCommand({
        TableName: table(),
        KeyConditionExpression: "pKey = :p",
        ExpressionAttributeValues: { ":p": pKey },
      }),
    );
    expect(query.Items?.[0]?.headers).toEqual({ Constructor: "1" });
  });

  it("keeps every attribute type", async () => {
    const pKey = `DOC#${randomUUID()}`;
    const values = {
      s: "text",
      n: 12.5,
      zero: 0,
      yes: true,
      nothing: null,
      list: [1, "two", { three: 3 }],
      strings: new Set(["a", "b"]),
      numbers: new Set([1, 2]),
      bytes: new Uint8Array([0, 1, 255]),
      map: new Map([["constructor", "kept"]]),
    };
    await db().send(
      new PutCommand({ TableName: table(), Item: { pKey, sKey: "A", ...values, gone: undefined } }),
    );
    const item = await get(pKey);
    expect(item).toMatchObject({ ...values, map: { constructor: "kept" } });
    expect(item && "gone" in item).toBe(false);
  });
});

describe("marshallItem", () => {
  it("refuses what DynamoDB cannot hold, with the attribute's path", () => {
    expect(() => marshallItem({ when: new Date() })).toThrow(UnstorableValueError);
    expect(() => marshallItem({ n: Number.NaN })).toThrow(/n: NaN/);
    expect(() => marshallItem({ f: () => 1 })).toThrow(UnstorableValueError);
    expect(() => marshallItem({ s: new Set() })).toThrow(/empty set/);
    let deep: unknown = "leaf";
    for (let i = 0; i < 40; i++) deep = { d: deep };
    expect(() => marshallItem({ deep })).toThrow(/deeper than 32/);
    // 10,000 levels fail the same way, without exhausting the stack.
    let deeper: unknown = [];
    for (let i = 0; i < 10_000; i++) deeper = [deeper];
    expect(() => marshallItem({ deeper })).toThrow(UnstorableValueError);
  });

  it("never reads a type from a property the value carries", () => {
    const attribute = marshallItem({ m: { constructor: { name: "String" }, length: 3 } });
    expect(attribute.m).toEqual({ M: { constructor: { M: { name: { S: "String" } } }, length: { N: "3" } } });
    expect(Object.getPrototypeOf(attribute.m?.M)).toBe(null);
  });
});
