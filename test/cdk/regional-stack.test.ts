import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { freshnessSettings } from "#lib/data-plane/freshness.ts";
import { DATA_PLANE_METRICS, DATA_PLANE_SERVICE } from "#lib/data-plane/request-metrics.ts";
import {
  REGION_STREAM_FILTERS,
  REGION_STREAM_SETTINGS,
  regionStreamFilterPatterns,
  TELEMETRY_STREAM_FILTERS,
  TELEMETRY_STREAM_SETTINGS,
} from "#lib/infra/region-stream.ts";
import {
  createTableInput,
  GLOBAL_SECONDARY_INDEXES,
  PARTITION_KEY,
  SORT_KEY,
  STREAM_VIEW_TYPE,
  TTL_ATTRIBUTE,
} from "#lib/infra/table-definition.ts";
import { ALARMED_METRICS, METRIC_NAMESPACE } from "#lib/log.ts";
import { buildTestApp, CDK_CONTEXT, logicalId, statementsOf, Template } from "./helpers.ts";

const built = buildTestApp();
const regions = CDK_CONTEXT.regions as string[];
const appName = String(CDK_CONTEXT.appName);
const definition = createTableInput(appName);

describe.each(regions)("RegionalStack %s", (region) => {
  const stack = built.regionalStacks[region];
  if (!stack) throw new Error(`no regional stack for ${region}`);
  const template = Template.fromStack(stack);
  const tableId = logicalId(stack.table);
  const keyId = logicalId(stack.key);
  const table = template.findResources("AWS::DynamoDB::Table")[tableId];

  it("is named after the app and the region, in that region", () => {
    expect(stack.stackName).toBe(`${appName}-regional-${region}`);
    expect(stack.region).toBe(region);
  });

  it("holds exactly one table and one KMS key", () => {
    template.resourceCountIs("AWS::DynamoDB::Table", 1);
    template.resourceCountIs("AWS::KMS::Key", 1);
    expect(table).toBeDefined();
  });

  it("names the table appName in every region (TABLE_NAME)", () => {
    expect(table?.Properties.TableName).toBe(appName);
  });

  it("has the keys and attribute types of table-definition.ts", () => {
    expect(table?.Properties.KeySchema).toEqual([
      { AttributeName: PARTITION_KEY, KeyType: "HASH" },
      { AttributeName: SORT_KEY, KeyType: "RANGE" },
    ]);
    expect(table?.Properties.KeySchema).toEqual(definition.KeySchema);
    const declared = [...definition.AttributeDefinitions].sort((a, b) =>
      a.AttributeName.localeCompare(b.AttributeName),
    );
    const actual = [...((table?.Properties.AttributeDefinitions ?? []) as { AttributeName: string }[])].sort(
      (a, b) => a.AttributeName.localeCompare(b.AttributeName),
    );
    expect(actual).toEqual(declared);
  });

  it("has every global secondary index of table-definition.ts, by name and keys, projecting ALL", () => {
    const indexes = table?.Properties.GlobalSecondaryIndexes as { IndexName: string }[];
    expect(indexes.map((index) => index.IndexName).sort()).toEqual(
      GLOBAL_SECONDARY_INDEXES.map((index) => index.indexName).sort(),
    );
    for (const index of GLOBAL_SECONDARY_INDEXES) {
      expect(indexes.find((candidate) => candidate.IndexName === index.indexName)).toEqual({
        IndexName: index.indexName,
        KeySchema: [
          { AttributeName: index.partitionKey, KeyType: "HASH" },
          { AttributeName: index.sortKey, KeyType: "RANGE" },
        ],
        Projection: { ProjectionType: "ALL" },
      });
    }
    expect(indexes).toEqual(expect.arrayContaining(definition.GlobalSecondaryIndexes));
  });

  it("expires items on the TTL attribute, streams new and old images, bills on demand", () => {
    expect(table?.Properties.TimeToLiveSpecification).toEqual({
      AttributeName: TTL_ATTRIBUTE,
      Enabled: true,
    });
    expect(TTL_ATTRIBUTE).toBe("TTL");
    expect(table?.Properties.StreamSpecification).toEqual({ StreamViewType: STREAM_VIEW_TYPE });
    expect(STREAM_VIEW_TYPE).toBe("NEW_AND_OLD_IMAGES");
    expect(table?.Properties.BillingMode).toBe(definition.BillingMode);
    expect(table?.Properties.ProvisionedThroughput).toBeUndefined();
  });

  it("protects the data: point-in-time recovery, deletion protection, Retain on delete and replace", () => {
    expect(table?.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(table?.Properties.DeletionProtectionEnabled).toBe(true);
    expect(table?.DeletionPolicy).toBe("Retain");
    expect(table?.UpdateReplacePolicy).toBe("Retain");
  });

  it("encrypts the table with the region's own customer-managed key", () => {
    expect(table?.Properties.SSESpecification).toEqual({
      SSEEnabled: true,
      SSEType: "KMS",
      KMSMasterKeyId: { "Fn::GetAtt": [keyId, "Arn"] },
    });
  });

  it("rotates and retains the KMS key, aliased alias/<appName> (KMS_KEY_ALIAS)", () => {
    template.hasResource("AWS::KMS::Key", {
      Properties: Match.objectLike({ EnableKeyRotation: true }),
      DeletionPolicy: "Retain",
      UpdateReplacePolicy: "Retain",
    });
    template.hasResourceProperties("AWS::KMS::Alias", {
      AliasName: `alias/${appName}`,
      TargetKeyId: { "Fn::GetAtt": [keyId, "Arn"] },
    });
  });

  it("lets account principals use the key only through DynamoDB of this region", () => {
    const key = template.findResources("AWS::KMS::Key")[keyId];
    const statements = key?.Properties.KeyPolicy.Statement as Record<string, unknown>[];
    const viaDynamoDb = statements.find(
      (statement) => statement.Sid === "AllowUseThroughDynamoDbForAccountPrincipals",
    );
    expect(viaDynamoDb).toMatchObject({
      Effect: "Allow",
      Principal: { AWS: "*" },
      Condition: {
        StringEquals: {
          "kms:CallerAccount": { Ref: "AWS::AccountId" },
          "kms:ViaService": `dynamodb.${region}.amazonaws.com`,
        },
      },
    });
    expect(viaDynamoDb?.Action).not.toContain("kms:*");
    // Every other statement is CDK's default key-administration statement for the account root.
    for (const statement of statements.filter((s) => s !== viaDynamoDb)) {
      expect(JSON.stringify(statement.Principal)).toContain(":root");
    }
  });

  describe("stream consumer", () => {
    const fnId = logicalId(stack.streamConsumer.function);
    const queueId = logicalId(stack.streamFailureQueue);
    const mappings = template.findResources("AWS::Lambda::EventSourceMapping");
    const mine = Object.values(mappings).filter((m) => m.Properties.FunctionName?.Ref === fnId);
    const mapping = mine[0]?.Properties;

    it("has one event source mapping, on this table's stream, into the consumer (and one into the telemetry consumer)", () => {
      expect(Object.keys(mappings)).toHaveLength(2);
      expect(mine).toHaveLength(1);
      expect(mapping.EventSourceArn).toEqual({ "Fn::GetAtt": [tableId, "StreamArn"] });
      expect(mapping.FunctionName).toEqual({ Ref: fnId });
    });

    it("reports batch item failures, retries a bounded number of times, bisects, and starts at LATEST", () => {
      expect(mapping).toMatchObject({
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        MaximumRetryAttempts: REGION_STREAM_SETTINGS.maximumRetryAttempts,
        BisectBatchOnFunctionError: true,
        BatchSize: REGION_STREAM_SETTINGS.batchSize,
        MaximumBatchingWindowInSeconds: REGION_STREAM_SETTINGS.maxBatchingWindowSeconds,
        MaximumRecordAgeInSeconds: REGION_STREAM_SETTINGS.maximumRecordAgeSeconds,
        ParallelizationFactor: 1,
        StartingPosition: "LATEST",
      });
      expect(mapping.MaximumRetryAttempts).toBeGreaterThan(0);
      expect(mapping.MaximumRetryAttempts).toBeLessThanOrEqual(10);
    });

    it("filters with the patterns of lib/infra/region-stream.ts: request-log INSERTs, meter-counter changes, suspending request logs", () => {
      const patterns = (mapping.FilterCriteria.Filters as { Pattern: string }[]).map((f) =>
        JSON.parse(f.Pattern),
      );
      expect(patterns).toEqual(regionStreamFilterPatterns());
      expect(patterns).toEqual([
        ...REGION_STREAM_FILTERS.meterAlerts,
        ...REGION_STREAM_FILTERS.transformSuspensions,
      ]);
      expect(patterns.length).toBeLessThanOrEqual(5);
    });

    it("sends batches that failed every retry to an encrypted, TLS-only SQS queue", () => {
      expect(mapping.DestinationConfig).toEqual({
        OnFailure: { Destination: { "Fn::GetAtt": [queueId, "Arn"] } },
      });
      const queue = template.findResources("AWS::SQS::Queue")[queueId];
      expect(queue?.Properties.KmsMasterKeyId).toBe("alias/aws/sqs");
      expect(queue?.Properties.MessageRetentionPeriod).toBe(14 * 86_400);
      const policy = Object.values(template.findResources("AWS::SQS::QueuePolicy"))[0];
      expect(JSON.stringify(policy?.Properties.PolicyDocument)).toContain('"aws:SecureTransport":"false"');
    });

    it("gets least privilege: item actions on this table, puts into the home table (suspension notifications), this stream, this queue", () => {
      const statements = statementsOf(template, stack.streamConsumer);
      const items = statements.filter((st) =>
        st.Action.some((a) => /^dynamodb:(Get|Put|Update)Item$/.test(a)),
      );
      expect(items).toEqual([
        {
          Effect: "Allow",
          Action: ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
          Resource: [`<${tableId}.Arn>`],
        },
        {
          Effect: "Allow",
          Action: ["dynamodb:PutItem"],
          // the home region's table, by its deterministic ARN (us-east-1 is the fixture's home region)
          Resource: [`arn:aws:dynamodb:us-east-1:<AWS::AccountId>:table/${appName}`],
        },
      ]);
      const all = statements.flatMap((st) => st.Action);
      for (const forbidden of [
        "dynamodb:Scan",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:BatchWriteItem",
      ])
        expect(all).not.toContain(forbidden);
      const stream = statements.filter((st) => st.Action.includes("dynamodb:GetRecords"));
      expect(stream.flatMap((st) => st.Resource)).toEqual([`<${tableId}.StreamArn>`]);
      const sqsStatements = statements.filter((st) => st.Action.some((a) => a.startsWith("sqs:")));
      expect(sqsStatements.flatMap((st) => st.Resource)).toEqual([`<${queueId}.Arn>`]);
      const star = statements.filter((st) => st.Resource.includes("*")).flatMap((st) => st.Action);
      expect([...new Set(star)].sort()).toEqual([
        "dynamodb:ListStreams",
        "xray:PutTelemetryRecords",
        "xray:PutTraceSegments",
      ]);
    });
  });

  describe("telemetry consumer", () => {
    const fnId = logicalId(stack.telemetryConsumer.function);

    it("does not trust CloudFront-Viewer-Country by default (the data plane is a function URL anyone calls)", () => {
      const variables =
        template.findResources("AWS::Lambda::Function")[fnId]?.Properties.Environment.Variables;
      expect(variables).toMatchObject({ TRUST_CLOUDFRONT_VIEWER_COUNTRY: "false" });
      const trusting = buildTestApp({ trustCloudFrontViewerCountry: "true" }).regionalStacks[region];
      if (!trusting) throw new Error(`no regional stack for ${region}`);
      const trustingTemplate = Template.fromStack(trusting);
      const trustingId = logicalId(trusting.telemetryConsumer.function);
      expect(
        trustingTemplate.findResources("AWS::Lambda::Function")[trustingId]?.Properties.Environment.Variables,
      ).toMatchObject({ TRUST_CLOUDFRONT_VIEWER_COUNTRY: "true" });
    });
    const queueId = logicalId(stack.telemetryFailureQueue);
    const mapping = Object.values(template.findResources("AWS::Lambda::EventSourceMapping")).find(
      (m) => m.Properties.FunctionName?.Ref === fnId,
    )?.Properties;

    it("reads this table's stream with ReportBatchItemFailures, bisect, bounded retries, one batch per shard", () => {
      expect(mapping?.EventSourceArn).toEqual({ "Fn::GetAtt": [tableId, "StreamArn"] });
      expect(mapping).toMatchObject({
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: TELEMETRY_STREAM_SETTINGS.maximumRetryAttempts,
        BatchSize: 100,
        ParallelizationFactor: 1,
        StartingPosition: "LATEST",
      });
      expect(mapping?.MaximumRetryAttempts).toBeGreaterThan(0);
      expect(mapping?.MaximumRetryAttempts).toBeLessThanOrEqual(10);
    });

    it("selects request-log INSERTs only", () => {
      const patterns = ((mapping?.FilterCriteria.Filters ?? []) as { Pattern: string }[]).map((f) =>
        JSON.parse(f.Pattern),
      );
      expect(patterns).toEqual([
        { eventName: ["INSERT"], dynamodb: { NewImage: { entity: { S: ["requestLog"] } } } },
      ]);
      expect(patterns).toEqual([...TELEMETRY_STREAM_FILTERS]);
    });

    it("sends batches that failed every retry to its own encrypted queue, with an alarm on it", () => {
      expect(mapping?.DestinationConfig).toEqual({
        OnFailure: { Destination: { "Fn::GetAtt": [queueId, "Arn"] } },
      });
      const queue = template.findResources("AWS::SQS::Queue")[queueId];
      expect(queue?.Properties.KmsMasterKeyId).toBe("alias/aws/sqs");
      const alarm = template.findResources("AWS::CloudWatch::Alarm")[logicalId(stack.telemetryFailureAlarm)];
      expect(alarm?.Properties).toMatchObject({
        Namespace: "AWS/SQS",
        MetricName: "ApproximateNumberOfMessagesVisible",
        Dimensions: [{ Name: "QueueName", Value: { "Fn::GetAtt": [queueId, "QueueName"] } }],
        Threshold: 1,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        TreatMissingData: "notBreaching",
      });
    });

    it("may only put and update items of this table (one TransactWriteItems per part), and read and write items of the home table (budgets, top-ups): no Scan, no Query, no delete", () => {
      const statements = statementsOf(template, stack.telemetryConsumer);
      const items = statements.filter((st) => st.Action.some((a) => /^dynamodb:\w+Item$/.test(a)));
      expect(items).toEqual([
        {
          Effect: "Allow",
          Action: ["dynamodb:PutItem", "dynamodb:UpdateItem"],
          Resource: [`<${tableId}.Arn>`],
        },
        {
          Effect: "Allow",
          Action: ["dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
          // the home region's table, by its deterministic ARN (us-east-1 is the fixture's home region)
          Resource: [`arn:aws:dynamodb:us-east-1:<AWS::AccountId>:table/${appName}`],
        },
      ]);
      const all = statements.flatMap((st) => st.Action);
      for (const forbidden of ["dynamodb:Scan", "dynamodb:Query", "dynamodb:DeleteItem"])
        expect(all).not.toContain(forbidden);
      const stream = statements.filter((st) => st.Action.includes("dynamodb:GetRecords"));
      expect(stream.flatMap((st) => st.Resource)).toEqual([`<${tableId}.StreamArn>`]);
      expect(mapping?.FunctionName).toEqual({ Ref: fnId });
    });
  });

  describe("data plane", () => {
    const fnId = logicalId(stack.dataPlane.function);
    const fn = template.findResources("AWS::Lambda::Function")[fnId];

    it("is a Node.js arm64 function with a timeout above the 60 s target maximum and measured memory", () => {
      expect(fn?.Properties).toMatchObject({
        Architectures: ["arm64"],
        Runtime: expect.stringMatching(/^nodejs\d+\.x$/),
        MemorySize: 1024,
      });
      expect(fn?.Properties.Timeout).toBeGreaterThan(60);
      expect(fn?.Properties.Environment.Variables).toMatchObject({
        TABLE_NAME: appName,
        KMS_KEY_ALIAS: `alias/${appName}`,
      });
    });

    it("checks the configuration's freshness in the strict mode by default (one GetItem per request)", () => {
      const variables = fn?.Properties.Environment.Variables as Record<string, string>;
      expect(variables).toMatchObject({ DATA_PLANE_FRESHNESS: "strict", DATA_PLANE_FRESHNESS_MS: "1000" });
      // What the function makes of them (lib/data-plane/freshness.ts).
      expect(freshnessSettings(variables)).toEqual({ mode: "strict", boundMs: 1000 });
    });

    it("is reachable at a public, streaming function URL (the log is written after the answer), exported", () => {
      // AuthType NONE: callers authenticate with their proxy credential inside the function.
      // RESPONSE_STREAM: the answer is streamed and the stream ended before the request log and the
      // meters' settlement are written (lib/data-plane/function-url.ts); BUFFERED would hold the
      // caller until they are.
      const urls = Object.values(template.findResources("AWS::Lambda::Url")).filter(
        (url) =>
          JSON.stringify(url.Properties.TargetFunctionArn) ===
          JSON.stringify({ "Fn::GetAtt": [fnId, "Arn"] }),
      );
      expect(urls).toHaveLength(1);
      expect(urls[0]?.Properties).toMatchObject({ AuthType: "NONE", InvokeMode: "RESPONSE_STREAM" });
      expect(Object.keys(template.findOutputs("DataPlaneUrl"))).toHaveLength(1);
    });

    it("reads and writes only this region's table and uses only this region's key", () => {
      const statements = statementsOf(template, stack.dataPlane);
      const dynamo = statements.filter((st) => st.Action.some((a) => a.startsWith("dynamodb:")));
      expect(dynamo).toHaveLength(1);
      expect(dynamo[0]!.Resource.sort()).toEqual([`<${tableId}.Arn>`, `<${tableId}.Arn>/index/*`].sort());
      expect(dynamo[0]!.Action).not.toContain("dynamodb:Scan");
      const kms = statements.filter((st) => st.Action.some((a) => a.startsWith("kms:")));
      expect(kms).toHaveLength(1);
      expect([...kms[0]!.Action].sort()).toEqual(["kms:Decrypt", "kms:GenerateDataKey"]);
      expect(kms[0]!.Resource).toEqual([`<${keyId}.Arn>`]);
      for (const st of statements) {
        for (const resource of st.Resource) {
          expect(resource).not.toMatch(/arn:aws:dynamodb:(?!<)/);
          for (const other of regions.filter((r) => r !== region)) expect(resource).not.toContain(other);
        }
      }
    });

    it("raises an alarm when a request log could not be written (the data plane's EMF metric)", () => {
      template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        Namespace: METRIC_NAMESPACE,
        MetricName: ALARMED_METRICS.requestLogWriteFailures,
        Dimensions: [{ Name: "Service", Value: "data-plane" }],
        Statistic: "Sum",
        Threshold: 1,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        TreatMissingData: "notBreaching",
      });
    });

    it("raises an alarm on the data plane's 5xx rate (Powertools metrics: ServerErrors / Requests over 5 minutes)", () => {
      const alarms = template.findResources("AWS::CloudWatch::Alarm");
      const rate = Object.values(alarms).find((a: any) =>
        (a.Properties.Metrics ?? []).some((m: any) => m.Expression?.includes("errors / requests")),
      ) as any;
      expect(rate).toBeDefined();
      expect(rate.Properties).toMatchObject({ Threshold: 5, ComparisonOperator: "GreaterThanThreshold" });
      const stats = Object.fromEntries(
        rate.Properties.Metrics.filter((m: any) => m.MetricStat).map((m: any) => [m.Id, m.MetricStat]),
      );
      for (const [id, name] of [
        ["errors", DATA_PLANE_METRICS.serverErrors],
        ["requests", DATA_PLANE_METRICS.requests],
      ] as const) {
        expect(stats[id]).toMatchObject({
          Metric: {
            Namespace: METRIC_NAMESPACE,
            MetricName: name,
            Dimensions: [{ Name: "service", Value: DATA_PLANE_SERVICE }],
          },
          Stat: "Sum",
          Period: 300,
        });
      }
    });

    it("raises alarms when the stream consumer fails: invocation errors, and batches sent to the failure queue", () => {
      template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        Namespace: "AWS/Lambda",
        MetricName: "Errors",
        Dimensions: [{ Name: "FunctionName", Value: Match.anyValue() }],
        Threshold: 1,
      });
      template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        Namespace: "AWS/SQS",
        MetricName: "ApproximateNumberOfMessagesVisible",
        Threshold: 1,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
      });
    });
  });
});
