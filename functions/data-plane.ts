/**
 * The regional data plane behind each region's function URL (`{region_base_url}`), spec 4.13.
 * Deployed with invoke mode RESPONSE_STREAM: the answer is streamed and the request log written
 * after it (lib/data-plane/function-url.ts). Outside Lambda's Node.js runtime (no `awslambda`
 * global) the buffered handler is exported.
 */
import type { Writable } from "node:stream";
import {
  createFunctionUrlHandler,
  createStreamingHandler,
  type StreamMetadata,
} from "#lib/data-plane/function-url.ts";

interface LambdaStreamingRuntime {
  streamifyResponse<T>(handler: T): T;
  HttpResponseStream: { from(stream: Writable, metadata: StreamMetadata): Writable };
}

const region = process.env.AWS_REGION ?? "us-east-1";
const runtime = (globalThis as unknown as { awslambda?: LambdaStreamingRuntime }).awslambda;

// The AWS SDK sets `globalThis.awslambda = {}` for its own use: streaming needs the runtime's API.
export const handler =
  typeof runtime?.streamifyResponse === "function"
    ? runtime.streamifyResponse(
        createStreamingHandler(region, (stream, metadata) =>
          runtime.HttpResponseStream.from(stream, metadata),
        ),
      )
    : createFunctionUrlHandler(region);
