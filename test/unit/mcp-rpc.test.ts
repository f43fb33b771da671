/** JSON-RPC rules of the MCP endpoint (lib/mcp/rpc.ts): batches refused, error prefixes once. */
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import {
  BATCH_REFUSED_MESSAGE,
  batchRefusal,
  INVALID_REQUEST,
  isBatchBody,
  wireMessage,
  withoutErrorPrefix,
} from "#lib/mcp/rpc.ts";

describe("isBatchBody", () => {
  it("is true for a JSON array, after JSON's whitespace", () => {
    for (const body of ["[]", '[{"jsonrpc":"2.0"}]', ' \t\r\n[{"id":1}]'])
      expect(isBatchBody(body)).toBe(true);
  });
  it("is false for one message and for what is not an array", () => {
    for (const body of ['{"jsonrpc":"2.0","id":1}', "", "  {}", '"["', "x["])
      expect(isBatchBody(body)).toBe(false);
  });
});

it("batchRefusal is JSON-RPC -32600 Invalid Request with a null id", () => {
  expect(batchRefusal()).toEqual({
    jsonrpc: "2.0",
    error: { code: INVALID_REQUEST, message: BATCH_REFUSED_MESSAGE },
    id: null,
  });
  expect(INVALID_REQUEST).toBe(-32600);
  expect(BATCH_REFUSED_MESSAGE).toMatch(/^Invalid Request: .*batches/);
});

describe("error prefixes", () => {
  it("withoutErrorPrefix removes McpError's prefixes, and only at the start", () => {
    const thrown = new McpError(-32602, "Unknown tool: x");
    expect(thrown.message).toBe("MCP error -32602: Unknown tool: x");
    expect(withoutErrorPrefix(thrown.message)).toBe("Unknown tool: x");
    expect(withoutErrorPrefix("MCP error -32602: MCP error -32602: Unknown tool: x")).toBe("Unknown tool: x");
    expect(withoutErrorPrefix("MCP error 1: text")).toBe("text");
    expect(withoutErrorPrefix("Unknown tool: MCP error -1: y")).toBe("Unknown tool: MCP error -1: y");
    expect(withoutErrorPrefix("MCP error: no code")).toBe("MCP error: no code");
  });

  it("wireMessage strips an error answer's message and leaves other messages as they are", () => {
    const error = {
      jsonrpc: "2.0" as const,
      id: 3,
      error: { code: -32602, message: "MCP error -32602: Bad", data: 1 },
    };
    expect(wireMessage(error)).toEqual({
      jsonrpc: "2.0",
      id: 3,
      error: { code: -32602, message: "Bad", data: 1 },
    });
    const clean = { jsonrpc: "2.0" as const, id: 4, error: { code: -32601, message: "Method not found" } };
    expect(wireMessage(clean)).toBe(clean);
    const result = { jsonrpc: "2.0" as const, id: 5, result: { message: "MCP error -1: kept" } };
    expect(wireMessage(result)).toBe(result);
    const notification = { jsonrpc: "2.0" as const, method: "notifications/message", params: {} };
    expect(wireMessage(notification)).toBe(notification);
  });
});
