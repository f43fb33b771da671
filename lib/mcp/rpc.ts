/**
 * JSON-RPC rules of the MCP endpoint that the SDK does not apply itself (issue 19), as plain
 * functions (lib/mcp/http.ts applies them):
 *
 * - No batches: MCP 2025-06-18 removed JSON-RPC batching, and a batch of 100 calls would cost one
 *   unit of the per-token rate limit. A body whose JSON is an array is refused with -32600
 *   Invalid Request (HTTP 400) before anything in it runs.
 * - An error's message is sent without the `MCP error <code>: ` prefix: the SDK's McpError puts it
 *   into the message it throws and a client puts it again on the message it receives, so the
 *   agent read `MCP error -32602: MCP error -32602: Unknown tool`. On the wire the code is in
 *   `code`; the message is the text alone, and a client shows the prefix once.
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** JSON-RPC 2.0 Invalid Request. */
export const INVALID_REQUEST = -32600;

export const BATCH_REFUSED_MESSAGE =
  "Invalid Request: JSON-RPC batches are not supported (MCP 2025-06-18); send one message per POST";

/** True when the body's JSON is an array (JSON's whitespace before it): a JSON-RPC batch. */
export const isBatchBody = (text: string): boolean => /^[\t\n\r ]*\[/.test(text);

/** The JSON-RPC error answer of a refused batch (its id is unknown: null). */
export const batchRefusal = () => ({
  jsonrpc: "2.0" as const,
  error: { code: INVALID_REQUEST, message: BATCH_REFUSED_MESSAGE },
  id: null,
});

const PREFIX = /^(?:MCP error -?\d+: )+/;

/** `message` without the `MCP error <code>: ` prefixes that McpError put in front of it. */
export const withoutErrorPrefix = (message: string): string => message.replace(PREFIX, "");

/** The message as sent: an error answer's message without the prefix; anything else unchanged. */
export function wireMessage(message: JSONRPCMessage): JSONRPCMessage {
  if (!("error" in message) || typeof message.error?.message !== "string") return message;
  const text = withoutErrorPrefix(message.error.message);
  return text === message.error.message
    ? message
    : { ...message, error: { ...message.error, message: text } };
}
