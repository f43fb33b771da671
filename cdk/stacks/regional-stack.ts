/**
 * The stateful resources of one region: its KMS key and its table. One RegionalStack is deployed
 * in every configured region (the home region included); the HomeStack reaches these tables by
 * their deterministic ARN (same table name everywhere), so no cross-region export ties the stacks.
 */
import { RemovalPolicy, Stack, type StackProps } from "aws-cdk-lib";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import type { Construct } from "constructs";
import { type AppSettings, kmsKeyAliasOf, tableNameOf } from "../app-settings.ts";
import { DataTable } from "../constructs/data-table.ts";

export interface RegionalStackProps extends StackProps {
  readonly settings: AppSettings;
}

export class RegionalStack extends Stack {
  /** The region's customer-managed key: table encryption and envelope encryption of secrets. */
  readonly key: kms.Key;
  readonly table: dynamodb.Table;

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

    // The regional data plane (the proxy Lambda behind this region's {region_base_url}) is added
    // here by a later change: a GatewayFunction bound read-only to `this.table`, granted
    // kms:Decrypt on `this.key` for envelope decryption, and its URL exported as a stack output.
  }
}
