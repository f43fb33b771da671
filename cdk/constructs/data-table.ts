/**
 * The gateway's DynamoDB table in one region, built from lib/infra/table-definition.ts (the module
 * the local runner provisions the emulator from), so keys, indexes, TTL and stream cannot drift.
 *
 * Why `dynamodb.Table` and not `TableV2`: TableV2 always synthesises an AWS::DynamoDB::GlobalTable,
 * whose purpose is replication. Here every region owns an independent table whose region-bound
 * items (credentials, targets, proxies, ...) must never be copied to another region, so a plain
 * AWS::DynamoDB::Table per region says exactly what is meant. Switching a live table between the
 * two resource types later means a CloudFormation import, so the choice is made once, here.
 */
import { RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as kms from "aws-cdk-lib/aws-kms";
import { Construct } from "constructs";
import {
  createTableInput,
  GLOBAL_SECONDARY_INDEXES,
  PARTITION_KEY,
  SORT_KEY,
  STREAM_VIEW_TYPE,
  TTL_ATTRIBUTE,
} from "#lib/infra/table-definition.ts";

export interface DataTableProps {
  /** Physical table name: the same in every region (TABLE_NAME). */
  readonly tableName: string;
  /** The region's customer-managed key; the table is encrypted with it. */
  readonly encryptionKey: kms.IKey;
}

const ATTRIBUTE_TYPES = {
  S: dynamodb.AttributeType.STRING,
  N: dynamodb.AttributeType.NUMBER,
  B: dynamodb.AttributeType.BINARY,
} as const;

export class DataTable extends Construct {
  readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: DataTableProps) {
    super(scope, id);
    const definition = createTableInput(props.tableName);
    const attribute = (name: string): dynamodb.Attribute => {
      const declared = definition.AttributeDefinitions.find((a) => a.AttributeName === name);
      if (!declared) throw new Error(`table-definition.ts declares no attribute type for key ${name}`);
      return { name, type: ATTRIBUTE_TYPES[declared.AttributeType] };
    };

    this.table = new dynamodb.Table(this, "Table", {
      tableName: definition.TableName,
      partitionKey: attribute(PARTITION_KEY),
      sortKey: attribute(SORT_KEY),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: TTL_ATTRIBUTE,
      stream: dynamodb.StreamViewType[STREAM_VIEW_TYPE],
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: props.encryptionKey,
    });

    for (const index of GLOBAL_SECONDARY_INDEXES) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.indexName,
        partitionKey: attribute(index.partitionKey),
        sortKey: attribute(index.sortKey),
        projectionType: dynamodb.ProjectionType.ALL,
      });
    }
  }
}
