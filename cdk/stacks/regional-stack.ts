/**
 * The stateful resources of one region: its KMS key and its table. One RegionalStack is deployed
 * in every configured region (the home region included); the HomeStack reaches these tables by
 * their deterministic ARN (same table name everywhere), so no cross-region export ties the stacks.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as eventSources from "aws-cdk-lib/aws-lambda-event-sources";
import * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { DATA_PLANE_METRICS, DATA_PLANE_SERVICE } from "#lib/data-plane/request-metrics.ts";
import {
  type FilterPattern,
  GEOIP_DATABASE_FILE,
  MAX_FILTER_PATTERNS,
  REGION_STREAM_FUNCTION,
  REGION_STREAM_SETTINGS,
  regionStreamFilterPatterns,
  TELEMETRY_STREAM_FILTERS,
  TELEMETRY_STREAM_FUNCTION,
  TELEMETRY_STREAM_SETTINGS,
} from "#lib/infra/region-stream.ts";
import { ALARMED_METRICS, METRIC_NAMESPACE } from "#lib/log.ts";
import { TRUST_VIEWER_COUNTRY_ENV } from "#lib/shared/telemetry/country.ts";
import { type AppSettings, kmsKeyAliasOf, tableNameOf } from "../app-settings.ts";
import { DataTable } from "../constructs/data-table.ts";
import { ALARM_ON_ANY, GatewayFunction } from "../constructs/gateway-function.ts";
import { wildcardResourceFinding } from "../nag.ts";

export interface RegionalStackProps extends StackProps {
  readonly settings: AppSettings;
  /** Directory of the function entry points (tests use stubs); defaults to functions/. */
  readonly functionsDir?: string;
}

/** Above the data plane's 60 s maximum target timeout (spec 8), with room to write the log. */
export const DATA_PLANE_TIMEOUT = Duration.seconds(75);
/**
 * 1024 MB on arm64: Lambda allots CPU in proportion to memory, and TLS to the target, JSON and
 * AES-GCM are CPU-bound; below 1024 MB the p99 of a proxied request grows with CPU starvation,
 * above it the added latency no longer falls (docs/data-plane.md). Operators may tune it.
 */
export const DATA_PLANE_MEMORY_MB = 1024;

export class RegionalStack extends Stack {
  /** The region's customer-managed key: table encryption and envelope encryption of secrets. */
  readonly key: kms.Key;
  readonly table: dynamodb.Table;
  readonly dataPlane: GatewayFunction;
  readonly dataPlaneUrl: lambda.FunctionUrl;
  /** Raised when a proxied request's log could not be written (a lost record is an incident). */
  readonly requestLogAlarm: cloudwatch.Alarm;
  /** Raised when more than 5% of the data plane's answers in 5 minutes are 5xx (at least 20 requests). */
  readonly serverErrorRateAlarm: cloudwatch.Alarm;
  /** Raised when a stream consumer fails (an invocation error, or a batch sent to its failure queue). */
  readonly streamConsumerAlarms: cloudwatch.Alarm[];
  /** The table stream's consumer (meter alert occurrences; telemetry later): docs/streams.md. */
  readonly streamConsumer: GatewayFunction;
  /** Where batches that failed every retry go (encrypted SQS queue, 14 days). */
  readonly streamFailureQueue: sqs.Queue;
  /** The telemetry consumer of the same stream (docs/telemetry.md), its failure queue and alarm. */
  readonly telemetryConsumer: GatewayFunction;
  readonly telemetryFailureQueue: sqs.Queue;
  readonly telemetryFailureAlarm: cloudwatch.Alarm;

  constructor(scope: Construct, id: string, props: RegionalStackProps) {
    super(scope, id, props);
    const { settings } = props;

    this.key = new kms.Key(this, "DataKey", {
      alias: kmsKeyAliasOf(settings),
      description: `${settings.appName}: encrypts the ${this.region} table and the secrets stored in it`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // DynamoDB decrypts the table key with the credentials of the principal that calls it. This
    // is the statement of the AWS-managed aws/dynamodb key: any principal of this account may use
    // the key *through DynamoDB in this region only*; who may read which table stays decided by
    // the principal's DynamoDB permissions (GatewayFunction.bindTable). Direct KMS use (envelope
    // encryption by the data plane) still needs an explicit grant on the key.
    this.key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: "AllowUseThroughDynamoDbForAccountPrincipals",
        principals: [new iam.AnyPrincipal()],
        actions: [
          "kms:Encrypt",
          "kms:Decrypt",
          "kms:ReEncrypt*",
          "kms:GenerateDataKey*",
          "kms:DescribeKey",
          "kms:CreateGrant",
        ],
        resources: ["*"],
        conditions: {
          StringEquals: {
            "kms:CallerAccount": this.account,
            "kms:ViaService": `dynamodb.${this.region}.amazonaws.com`,
          },
        },
      }),
    );

    this.table = new DataTable(this, "Data", {
      tableName: tableNameOf(settings),
      encryptionKey: this.key,
    }).table;

    // The regional data plane: the proxy Lambda behind this region's {region_base_url}. It reads
    // and writes only this region's table (configuration, rate windows, request logs, single-use
    // claims, cached JWKS and refreshed OAuth2 tokens) and uses only this region's key.
    this.dataPlane = new GatewayFunction(this, "DataPlane", {
      name: "data-plane",
      settings,
      functionsDir: props.functionsDir,
      description: `${settings.appName} data plane (${this.region})`,
      timeout: DATA_PLANE_TIMEOUT,
      memorySize: DATA_PLANE_MEMORY_MB,
      // Cold start: jose, re2js and the KMS client in chunks read on demand (docs/performance.md).
      splitting: true,
    });
    // Configuration freshness (lib/data-plane/freshness.ts, docs/data-plane.md "Freshness"): strict,
    // one consistent GetItem of the client's version per request, so a change stops traffic on the
    // next request (spec 3); relaxed trades that for no store call on the caller's wait within the bound.
    this.dataPlane.addEnvironment("DATA_PLANE_FRESHNESS", "strict");
    this.dataPlane.addEnvironment("DATA_PLANE_FRESHNESS_MS", "1000");
    this.dataPlane.bindTable(this.table, "RW");
    this.dataPlane.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ["kms:Decrypt", "kms:GenerateDataKey"],
        resources: [this.key.keyArn],
        conditions: {
          "ForAllValues:StringEquals": { "kms:EncryptionContextKeys": ["clientId", "credentialId"] },
        },
      }),
    );
    // Callers authenticate with their proxy credential inside the function (spec 5.3), so the
    // URL itself is public, as API Gateway's would be.
    this.dataPlaneUrl = this.dataPlane.function.addFunctionUrl({
      authType: lambda.FunctionUrlAuthType.NONE,
      // The answer is streamed and the request log written after it (lib/data-plane/function-url.ts).
      invokeMode: lambda.InvokeMode.RESPONSE_STREAM,
    });
    // The data plane counts every request log it could not write (EMF, lib/log.ts metricFields).
    this.requestLogAlarm = new cloudwatch.Alarm(this, "RequestLogWriteFailures", {
      alarmDescription: `${settings.appName} (${this.region}): request logs could not be written`,
      metric: new cloudwatch.Metric({
        namespace: METRIC_NAMESPACE,
        metricName: ALARMED_METRICS.requestLogWriteFailures,
        dimensionsMap: { Service: "data-plane" },
        statistic: cloudwatch.Stats.SUM,
        period: Duration.minutes(5),
      }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    // The data plane's own metrics (lib/data-plane/request-metrics.ts, Powertools Metrics, EMF).
    const dataPlaneMetric = (metricName: string) =>
      new cloudwatch.Metric({
        namespace: METRIC_NAMESPACE,
        metricName,
        dimensionsMap: { service: DATA_PLANE_SERVICE },
        statistic: cloudwatch.Stats.SUM,
        period: Duration.minutes(5),
      });
    this.serverErrorRateAlarm = new cloudwatch.Alarm(this, "DataPlaneServerErrorRate", {
      alarmDescription: `${settings.appName} (${this.region}): over 5% of proxied requests answered 5xx`,
      metric: new cloudwatch.MathExpression({
        expression: "IF(requests >= 20, 100 * errors / requests, 0)",
        usingMetrics: {
          errors: dataPlaneMetric(DATA_PLANE_METRICS.serverErrors),
          requests: dataPlaneMetric(DATA_PLANE_METRICS.requests),
        },
        label: "5xx answers (%)",
        period: Duration.minutes(5),
      }),
      threshold: 5,
      evaluationPeriods: 2,
      datapointsToAlarm: 2,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.streamFailureQueue = this.failureQueue("StreamFailures", "table stream");
    this.streamConsumer = this.addStreamConsumer(settings, props.functionsDir);
    this.telemetryFailureQueue = this.failureQueue("TelemetryStreamFailures", "telemetry");
    this.telemetryConsumer = this.addTelemetryConsumer(settings, props.functionsDir);
    // Each consumer: an alarm on its invocation errors, and one on batches that failed every
    // retry (on its failure queue: records not processed until an operator replays them).
    this.streamConsumerAlarms = this.consumerAlarms(
      settings,
      "StreamConsumer",
      "the table stream consumer (meter alerts)",
      this.streamConsumer,
      this.streamFailureQueue,
    );
    const telemetryAlarms = this.consumerAlarms(
      settings,
      "TelemetryConsumer",
      "the telemetry stream consumer",
      this.telemetryConsumer,
      this.telemetryFailureQueue,
    );
    this.streamConsumerAlarms.push(...telemetryAlarms);
    this.telemetryFailureAlarm = telemetryAlarms[1]!;
    new CfnOutput(this, "DataPlaneUrl", {
      description: `{region_base_url} of ${this.region}`,
      value: this.dataPlaneUrl.url,
    });
  }

  /** Alarms of one stream consumer: invocation errors, and batches on its failure queue. */
  private consumerAlarms(
    settings: AppSettings,
    id: string,
    what: string,
    consumer: GatewayFunction,
    queue: sqs.Queue,
  ): cloudwatch.Alarm[] {
    return [
      consumer.errorsAlarm(this, `${id}Errors`, `${settings.appName} (${this.region}): ${what} failed`),
      new cloudwatch.Alarm(this, `${id}FailuresQueued`, {
        alarmDescription: `${settings.appName} (${this.region}): batches of ${what} failed every retry (replay them from the stream)`,
        metric: queue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(5),
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        ...ALARM_ON_ANY,
      }),
    ];
  }

  /**
   * The stream consumer (functions/region-stream.ts) and its event source mapping, from the one
   * declaration in lib/infra/region-stream.ts: filter criteria, ReportBatchItemFailures, bounded
   * retries, bisect on error, an on-failure queue. It reads meters and writes occurrences and
   * stream-record markers in this table (GetItem, PutItem, UpdateItem: no index, no Scan), and
   * puts transform-suspension notifications into the home region's table (PutItem only).
   */
  private addStreamConsumer(settings: AppSettings, functionsDir: string | undefined): GatewayFunction {
    const consumer = new GatewayFunction(this, "StreamConsumer", {
      name: REGION_STREAM_FUNCTION.name,
      settings,
      functionsDir,
      description: `${settings.appName} table stream consumer (${this.region})`,
      timeout: Duration.seconds(60),
    });
    consumer.allowTableItemActions(this.table, [
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
    ]);
    consumer.allowTableItemActions(this.homeTableArn(settings), ["dynamodb:PutItem"]);
    const patterns = regionStreamFilterPatterns();
    if (patterns.length > MAX_FILTER_PATTERNS)
      throw new Error(
        `The stream consumer has ${patterns.length} filter patterns; Lambda allows ${MAX_FILTER_PATTERNS}`,
      );
    this.addStreamMapping(consumer, REGION_STREAM_SETTINGS, patterns, this.streamFailureQueue);
    return consumer;
  }

  /**
   * One event source mapping on this table's stream: the settings and filter patterns of its one
   * declaration (lib/infra/region-stream.ts), ReportBatchItemFailures, an on-failure queue.
   */
  private addStreamMapping(
    consumer: GatewayFunction,
    stream: typeof REGION_STREAM_SETTINGS,
    patterns: readonly FilterPattern[],
    failures: sqs.Queue,
  ): void {
    consumer.function.addEventSource(
      new eventSources.DynamoEventSource(this.table, {
        startingPosition: lambda.StartingPosition[stream.startingPosition],
        batchSize: stream.batchSize,
        maxBatchingWindow: Duration.seconds(stream.maxBatchingWindowSeconds),
        retryAttempts: stream.maximumRetryAttempts,
        bisectBatchOnError: stream.bisectBatchOnFunctionError,
        maxRecordAge: Duration.seconds(stream.maximumRecordAgeSeconds),
        parallelizationFactor: stream.parallelizationFactor,
        reportBatchItemFailures: true,
        onFailure: new eventSources.SqsDlq(failures),
        filters: patterns.map((pattern) => lambda.FilterCriteria.filter({ ...pattern })),
      }),
    );
    // DynamoEventSource grants what the mapping needs: DescribeStream, GetRecords and
    // GetShardIterator on this table's stream, kms:Decrypt on its key, and ListStreams.
    Validations.of(consumer.role).acknowledge({
      id: wildcardResourceFinding(consumer, "*"),
      reason:
        "dynamodb:ListStreams (the event source mapping's stream discovery) and X-Ray's PutTraceSegments/PutTelemetryRecords support no resource-level permissions; every other stream action names this table's stream.",
    });
  }

  /** The home region's table (its deterministic ARN, without referencing the home stack). */
  private homeTableArn(settings: AppSettings): string {
    return this.formatArn({
      service: "dynamodb",
      region: settings.homeRegion,
      resource: "table",
      resourceName: tableNameOf(settings),
    });
  }

  /** An on-failure destination: encrypted (SQS-managed key), TLS only, 14 days. */
  private failureQueue(id: string, consumer: string): sqs.Queue {
    const queue = new sqs.Queue(this, id, {
      encryption: sqs.QueueEncryption.KMS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(queue).acknowledge({
      id: "AwsSolutions-SQS3",
      reason: `This queue is itself the dead-letter destination: the ${consumer} consumer's event source mapping sends it the metadata of batches that failed every retry, for an operator to replay from the stream.`,
    });
    return queue;
  }

  /**
   * The telemetry consumer (functions/telemetry-stream.ts) and its own event source mapping on this
   * table's stream (lib/infra/region-stream.ts, TELEMETRY_STREAM_*): request-log INSERTs,
   * ReportBatchItemFailures, bounded retries, bisect on error, its own failure queue. It writes
   * telemetry buckets and batch markers in one TransactWriteItems (PutItem, UpdateItem): no read,
   * no index, no Scan, no delete. In the home region's table (its deterministic ARN) it reads
   * managed clients' configurations and draws their budgets down, and claims and settles
   * automatic top-ups (GetItem, BatchGetItem, PutItem, UpdateItem: docs/msp-api.md), charging
   * through the payment processor (the Stripe secret, when configured).
   */
  private addTelemetryConsumer(settings: AppSettings, functionsDir: string | undefined): GatewayFunction {
    const consumer = new GatewayFunction(this, "TelemetryConsumer", {
      name: TELEMETRY_STREAM_FUNCTION.name,
      // The GeoIP database the consumer reads (lib/streams/geoip.ts), beside its bundle.
      packageFiles: [GEOIP_DATABASE_FILE],
      settings,
      functionsDir,
      description: `${settings.appName} telemetry stream consumer (${this.region})`,
      timeout: Duration.seconds(TELEMETRY_STREAM_FUNCTION.timeoutSeconds),
    });
    consumer.allowTableItemActions(this.table, ["dynamodb:PutItem", "dynamodb:UpdateItem"]);
    consumer.allowTableItemActions(this.homeTableArn(settings), [
      "dynamodb:GetItem",
      "dynamodb:BatchGetItem",
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
    ]);
    if (settings.stripeSecretArn)
      consumer
        .addEnvironment("STRIPE_SECRET_ARN", settings.stripeSecretArn)
        .allowReadSecret(settings.stripeSecretArn);
    // The country from CloudFront-Viewer-Country only when CloudFront is in front of the data plane.
    consumer.addEnvironment(
      TRUST_VIEWER_COUNTRY_ENV,
      settings.trustCloudFrontViewerCountry ? "true" : "false",
    );
    this.addStreamMapping(
      consumer,
      TELEMETRY_STREAM_SETTINGS,
      TELEMETRY_STREAM_FILTERS,
      this.telemetryFailureQueue,
    );
    return consumer;
  }
}
