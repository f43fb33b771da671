/**
 * A lossy front for the emulator: an HTTP server on loopback that passes every AWS call on to the
 * emulator unchanged, except that, once armed, it loses the answer of the first TransactWriteItems
 * (or, when told, UpdateItem) it is told to match. That transaction reaches the emulator, which applies it, and then the
 * caller's socket is destroyed instead of returning the answer (a committed transaction whose
 * answer is lost on the wire). The AWS SDK sees a reset connection, a retryable error, and sends
 * the same request again, with the same ClientRequestToken.
 *
 * AWS_ENDPOINT_URL is read per process, so a test routes every client through the front
 * (`routeThrough`), and arms it just before the request whose transaction it means to hit.
 */
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { resetClients } from "#lib/aws/clients.ts";

/** A TransactWriteItems request as it travels on the wire (DynamoDB JSON). */
export interface TransactWriteRequest {
  TransactItems: Record<string, { Key?: unknown; Item?: unknown }>[];
  ClientRequestToken?: string;
}

/** An UpdateItem request as it travels on the wire (DynamoDB JSON). */
export interface UpdateItemRequest {
  Key: Record<string, { S?: string }>;
  UpdateExpression?: string;
}

/** One TransactWriteItems attempt that matched, and the token it carried. */
export interface TransactionAttempt {
  token: string | undefined;
  /** False for the attempt whose answer was lost. */
  answered: boolean;
}

export interface LoseOptions {
  /** Which transactions to hit (default: every TransactWriteItems). */
  matches?: (request: TransactWriteRequest) => boolean;
  /** Lose the answer of an UpdateItem instead, the first this matches (a quota lease). */
  update?: (request: UpdateItemRequest) => boolean;
  /** Remove ClientRequestToken from every matching attempt (what a retry would be without one). */
  stripToken?: boolean;
}

export interface LossyFront {
  url: string;
  /**
   * Arm the front: the first matching TransactWriteItems from now on has its answer lost. Returns
   * the list in which every matching attempt (the SDK's retry included) is recorded, in order.
   */
  loseFirstAnswer(options?: LoseOptions): TransactionAttempt[];
  /** Pass everything on unchanged again. */
  disarm(): void;
  close(): Promise<void>;
}

const TRANSACT_WRITE_TARGET = "DynamoDB_20120810.TransactWriteItems";
const UPDATE_ITEM_TARGET = "DynamoDB_20120810.UpdateItem";

export async function startLossyFront(emulator: string): Promise<LossyFront> {
  let armed: { options: LoseOptions; attempts: TransactionAttempt[] } | undefined;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      let payload = Buffer.concat(chunks);
      const headers = { ...req.headers };
      let drop = false;
      const scenario = armed;
      if (scenario?.options.update && req.headers["x-amz-target"] === UPDATE_ITEM_TARGET) {
        const parsed = JSON.parse(payload.toString("utf8")) as UpdateItemRequest;
        if (scenario.options.update(parsed)) {
          drop = scenario.attempts.length === 0;
          scenario.attempts.push({ token: undefined, answered: !drop });
        }
      } else if (
        scenario &&
        !scenario.options.update &&
        req.headers["x-amz-target"] === TRANSACT_WRITE_TARGET
      ) {
        const parsed = JSON.parse(payload.toString("utf8")) as TransactWriteRequest;
        if (scenario.options.matches?.(parsed) ?? true) {
          drop = scenario.attempts.length === 0;
          scenario.attempts.push({ token: parsed.ClientRequestToken, answered: !drop });
          if (scenario.options.stripToken) {
            delete parsed.ClientRequestToken;
            payload = Buffer.from(JSON.stringify(parsed));
            headers["content-length"] = String(payload.length);
          }
        }
      }
      const upstream = httpRequest(
        new URL(req.url ?? "/", emulator),
        { method: req.method, headers },
        (answer) => {
          const answerChunks: Buffer[] = [];
          answer.on("data", (chunk: Buffer) => answerChunks.push(chunk));
          answer.on("end", () => {
            // The emulator has answered, so the transaction is applied: lose the answer.
            if (drop) return req.socket.destroy();
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(Buffer.concat(answerChunks));
          });
        },
      );
      upstream.on("error", () => res.destroy());
      upstream.end(payload);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    loseFirstAnswer(options = {}) {
      armed = { options, attempts: [] };
      return armed.attempts;
    },
    disarm() {
      armed = undefined;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Send every AWS call of this process through `front` (new clients are created on next use).
 * Returns the function that routes them back to where they went before.
 */
export function routeThrough(front: LossyFront): () => void {
  const before = process.env.AWS_ENDPOINT_URL;
  process.env.AWS_ENDPOINT_URL = front.url;
  resetClients();
  return () => {
    process.env.AWS_ENDPOINT_URL = before;
    resetClients();
  };
}

/** The `pKey`/`sKey` strings of a transaction's items (Key of an Update or check, Item of a Put). */
export function keysOf(request: TransactWriteRequest): string[] {
  return request.TransactItems.flatMap((action) =>
    Object.values(action).flatMap((step) => {
      const record = (step.Key ?? step.Item) as Record<string, { S?: string }> | undefined;
      return [record?.pKey?.S, record?.sKey?.S].filter((value): value is string => value !== undefined);
    }),
  );
}

/** Whether a transaction puts an item (the after-answer settlement puts the request log record). */
export const putsAnItem = (request: TransactWriteRequest) =>
  request.TransactItems.some((action) => action.Put !== undefined);
