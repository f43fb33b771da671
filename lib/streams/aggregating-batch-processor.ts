/**
 * A Powertools BatchProcessor (`@aws-lambda-powertools/batch`, DynamoDB Streams,
 * ReportBatchItemFailures) for consumers that write a whole batch at once rather than record by
 * record: the record handler only decodes (a record it cannot decode fails), then `commit` gets the
 * decoded records before the first failure, in stream order, and answers the position of the
 * first one it could not write. Every record from there on is reported as failed, so Lambda
 * checkpoints after what was written and delivers the rest again. When every record failed,
 * Powertools throws FullBatchFailureError: nothing was written, and Lambda bisects and retries.
 */
import { BatchProcessor, EventType } from "@aws-lambda-powertools/batch";
import type { FailureResponse, SuccessResponse } from "@aws-lambda-powertools/batch/types";
import type { DynamoDBRecord } from "aws-lambda";

export type CommitResult = { failedAt?: number; error?: unknown };

const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)));

export class AggregatingBatchProcessor<T> extends BatchProcessor {
  #deferred = false;

  constructor(private readonly commit: (decoded: T[]) => Promise<CommitResult>) {
    super(EventType.DynamoDBStreams);
  }

  /** Powertools builds the response here; it waits until the commit has settled. */
  override clean(): void {
    if (!this.#deferred) super.clean();
  }

  override async process(): Promise<(SuccessResponse | FailureResponse)[]> {
    this.#deferred = true;
    let results: (SuccessResponse | FailureResponse)[];
    try {
      // Decode every record (Powertools' per-record step; records in order).
      results = await super.process();
    } finally {
      this.#deferred = false;
    }
    const firstFailed = results.findIndex(([status]) => status === "fail");
    const prefix = results.slice(0, firstFailed < 0 ? results.length : firstFailed);
    let outcome: CommitResult = {};
    if (prefix.length > 0) {
      try {
        outcome = await this.commit(prefix.map(([, decoded]) => decoded as T));
      } catch (error) {
        outcome = { failedAt: 0, error };
      }
    }
    const failedAt = Math.min(outcome.failedAt ?? prefix.length, prefix.length);
    const unwritten = new Set<DynamoDBRecord>();
    for (let position = failedAt; position < results.length; position++) {
      const entry = results[position] as SuccessResponse | FailureResponse;
      if (entry[0] !== "success") continue;
      const record = entry[2] as DynamoDBRecord;
      unwritten.add(record);
      results[position] = this.failureHandler(
        record,
        asError(outcome.error ?? new Error("Not written: an earlier record of the batch failed")),
      );
    }
    this.successMessages = this.successMessages.filter((record) => !unwritten.has(record as DynamoDBRecord));
    this.clean();
    return results;
  }
}
