/**
 * A minimal DynamoDB Streams client for the local stream poller: DescribeStream, GetShardIterator
 * and GetRecords over the service's JSON protocol (target prefix `DynamoDBStreams_20120810`),
 * signed with SigV4 (signing name `dynamodb`, as the SDK's own streams client signs).
 *
 * Why not `@aws-sdk/client-dynamodb-streams`: it is not a dependency of the project (only the
 * DynamoDB, KMS, SES and Secrets Manager clients are). The signer and credentials come from what
 * every installed SDK client already depends on. Deployed, nothing here runs: Lambda's event
 * source mapping reads the stream. With the SDK client added, this file goes and the poller calls
 * it with the same inputs (the shapes below are the API's).
 */
import { createHash, createHmac } from "node:crypto";
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { SignatureV4 } from "@smithy/signature-v4";
import type { AwsCredentialIdentity, Checksum, SourceData } from "@smithy/types";

/** node:crypto as the Checksum the signer expects (SHA-256, keyed = HMAC). */
class Sha256 implements Checksum {
  private hash: ReturnType<typeof createHash> | ReturnType<typeof createHmac>;
  constructor(private readonly secret?: SourceData) {
    this.hash = this.fresh();
  }
  private fresh() {
    return this.secret === undefined
      ? createHash("sha256")
      : createHmac("sha256", toBytes(this.secret as SourceData));
  }
  update(data: Uint8Array | string): void {
    this.hash.update(typeof data === "string" ? data : Buffer.from(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
}

function toBytes(data: SourceData): Uint8Array {
  if (typeof data === "string") return Buffer.from(data, "utf8");
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Uint8Array(data);
}

/** The stream record as the Streams API returns it (Lambda's event record adds eventSourceARN). */
export interface StreamRecordWire {
  eventID?: string;
  eventName?: "INSERT" | "MODIFY" | "REMOVE";
  eventVersion?: string;
  eventSource?: string;
  awsRegion?: string;
  dynamodb?: {
    ApproximateCreationDateTime?: number;
    Keys?: Record<string, AttributeValue>;
    NewImage?: Record<string, AttributeValue>;
    OldImage?: Record<string, AttributeValue>;
    SequenceNumber?: string;
    SizeBytes?: number;
    StreamViewType?: string;
  };
}

export interface ShardDescription {
  ShardId: string;
  ParentShardId?: string;
  SequenceNumberRange?: { StartingSequenceNumber?: string; EndingSequenceNumber?: string };
}

export class StreamsApiError extends Error {
  constructor(
    override readonly name: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export interface DynamoDbStreamsClient {
  describeStream(
    streamArn: string,
    exclusiveStartShardId?: string,
  ): Promise<{
    StreamDescription: { StreamArn: string; Shards?: ShardDescription[]; LastEvaluatedShardId?: string };
  }>;
  getShardIterator(input: {
    StreamArn: string;
    ShardId: string;
    ShardIteratorType: "TRIM_HORIZON" | "LATEST" | "AT_SEQUENCE_NUMBER" | "AFTER_SEQUENCE_NUMBER";
    SequenceNumber?: string;
  }): Promise<{ ShardIterator?: string }>;
  getRecords(
    shardIterator: string,
    limit?: number,
  ): Promise<{ Records?: StreamRecordWire[]; NextShardIterator?: string }>;
}

export function dynamoDbStreamsClient(options: {
  region: string;
  credentials: () => Promise<AwsCredentialIdentity>;
  /** Defaults to AWS_ENDPOINT_URL_DYNAMODB_STREAMS, AWS_ENDPOINT_URL, then the AWS endpoint. */
  endpoint?: string;
  timeoutMs?: number;
}): DynamoDbStreamsClient {
  const endpoint = (
    options.endpoint ??
    process.env.AWS_ENDPOINT_URL_DYNAMODB_STREAMS ??
    process.env.AWS_ENDPOINT_URL ??
    `https://streams.dynamodb.${options.region}.amazonaws.com`
  ).replace(/\/$/, "");
  const url = new URL(`${endpoint}/`);
  const signer = new SignatureV4({
    credentials: options.credentials,
    region: options.region,
    service: "dynamodb",
    sha256: Sha256,
  });

  async function call<T>(operation: string, input: unknown): Promise<T> {
    const body = JSON.stringify(input);
    const signed = await signer.sign({
      method: "POST",
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      path: url.pathname,
      query: {},
      headers: {
        host: url.host,
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": `DynamoDBStreams_20120810.${operation}`,
      },
      body,
    });
    const response = await fetch(url, {
      method: "POST",
      headers: signed.headers,
      body,
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
    const text = await response.text();
    const parsed = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
    if (!response.ok) {
      const type =
        String(parsed.__type ?? parsed.code ?? "StreamsError")
          .split("#")
          .pop() ?? "StreamsError";
      throw new StreamsApiError(type, String(parsed.message ?? parsed.Message ?? text), response.status);
    }
    return parsed as T;
  }

  return {
    describeStream: (streamArn, exclusiveStartShardId) =>
      call("DescribeStream", { StreamArn: streamArn, ExclusiveStartShardId: exclusiveStartShardId }),
    getShardIterator: (input) => call("GetShardIterator", input),
    getRecords: (shardIterator, limit) => call("GetRecords", { ShardIterator: shardIterator, Limit: limit }),
  };
}
