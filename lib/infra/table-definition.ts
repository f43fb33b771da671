/**
 * The one definition of the gateway's DynamoDB table. The CDK stack (cdk/constructs/data-table.ts)
 * and the local provisioning (local/provision.ts) both build their table from this module, so the
 * emulator and AWS never drift apart. It must stay free of aws-cdk-lib and SDK runtime imports:
 * Lambda bundles and the local runner import it.
 */
export const PARTITION_KEY = "pKey";
export const SORT_KEY = "sKey";
export const TTL_ATTRIBUTE = "TTL";
export const STREAM_VIEW_TYPE = "NEW_AND_OLD_IMAGES" as const;

export interface IndexDefinition {
  indexName: string;
  partitionKey: string;
  sortKey: string;
  /** What the index is for; mirrored in docs/access-patterns.md. */
  purpose: string;
}

/** Overloaded, sparse global secondary indexes (only items that carry the attributes appear). */
export const GLOBAL_SECONDARY_INDEXES: readonly IndexDefinition[] = [
  {
    indexName: "GSI1",
    partitionKey: "gsi1pk",
    sortKey: "gsi1sk",
    purpose: "look-ups by a secondary identity: invites by invitee email, MSP invites by email",
  },
  {
    indexName: "GSI2",
    partitionKey: "gsi2pk",
    sortKey: "gsi2sk",
    purpose: "work queues ordered by time: clients and users scheduled for deletion",
  },
];

/** Plain-data form of CreateTable input (structurally compatible with the SDK's CreateTableCommandInput). */
export function createTableInput(tableName: string) {
  const keyAttributes = [
    PARTITION_KEY,
    SORT_KEY,
    ...GLOBAL_SECONDARY_INDEXES.flatMap((i) => [i.partitionKey, i.sortKey]),
  ];
  return {
    TableName: tableName,
    BillingMode: "PAY_PER_REQUEST" as const,
    AttributeDefinitions: keyAttributes.map((name) => ({ AttributeName: name, AttributeType: "S" as const })),
    KeySchema: [
      { AttributeName: PARTITION_KEY, KeyType: "HASH" as const },
      { AttributeName: SORT_KEY, KeyType: "RANGE" as const },
    ],
    GlobalSecondaryIndexes: GLOBAL_SECONDARY_INDEXES.map((index) => ({
      IndexName: index.indexName,
      KeySchema: [
        { AttributeName: index.partitionKey, KeyType: "HASH" as const },
        { AttributeName: index.sortKey, KeyType: "RANGE" as const },
      ],
      Projection: { ProjectionType: "ALL" as const },
    })),
    StreamSpecification: { StreamEnabled: true, StreamViewType: STREAM_VIEW_TYPE },
  };
}
