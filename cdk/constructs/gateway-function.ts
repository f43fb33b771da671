/**
 * The one Lambda construct of the gateway: every function (route groups, authorizer, scheduled
 * jobs, and later the data plane) is built here, so runtime, architecture, bundling, tracing,
 * logging and the common environment are decided once.
 *
 * Permissions are added only through the methods below (bindTable, allowSendEmail,
 * allowSecretKeys, allowSigningKey, allowReadSecret, allowReadParameter), each granting exactly the actions it names
 * on exactly the resources given.
 * The role carries no AWS-managed policy: it writes only to its own log group.
 */
import { basename, join } from "node:path";
import { AssetHashType, DockerImage, Duration, Stack, Validations } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { type ICommandHooks, NodejsFunction, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { type AppSettings, appUrlParameterName, kmsKeyAliasOf, tableNameOf } from "../app-settings.ts";
import {
  buildSplitBundle,
  ESBUILD_TARGET,
  ESM_REQUIRE_BANNER,
  MAIN_FIELDS,
  PROJECT_ROOT,
} from "../bundle.ts";
import { wildcardResourceFinding } from "../nag.ts";

export { PROJECT_ROOT };
/** Where the entry points live: functions/<name>.ts, each exporting `handler`. */
export const DEFAULT_FUNCTIONS_DIR = join(PROJECT_ROOT, "functions");

/** The newest Node.js runtime this aws-cdk-lib knows (cdk-nag AwsSolutions-L1 asks for it). */
export const RUNTIME = lambda.Runtime.NODEJS_24_X;

/** Read access: items, batches, queries (table and indexes), transaction condition checks. */
export const TABLE_READ_ACTIONS = [
  "dynamodb:GetItem",
  "dynamodb:BatchGetItem",
  "dynamodb:Query",
  "dynamodb:ConditionCheckItem",
  "dynamodb:DescribeTable",
] as const;
/** Write access adds the item-level writes; TransactWriteItems is authorised by these same actions. */
export const TABLE_WRITE_ACTIONS = [
  "dynamodb:PutItem",
  "dynamodb:UpdateItem",
  "dynamodb:DeleteItem",
  "dynamodb:BatchWriteItem",
] as const;

/** An alarm raised as soon as its metric reaches 1 in one period; no data is not a breach. */
export const ALARM_ON_ANY = {
  threshold: 1,
  evaluationPeriods: 1,
  comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
} as const;

export type TableAccess = "RO" | "RW";
/** A table construct, or a table ARN (for another region's table, built from its deterministic name). */
export type TableRef = dynamodb.ITable | string;

export type FunctionSettings = Pick<
  AppSettings,
  "appName" | "homeRegion" | "regions" | "emailSender" | "appUrl" | "dataPlaneUrls"
>;

/** The variables lib/config.ts reads, identical for every function of the app. */
export function commonEnvironment(settings: FunctionSettings): Record<string, string> {
  return {
    TABLE_NAME: tableNameOf(settings),
    HOME_REGION: settings.homeRegion,
    REGIONS: settings.regions.join(","),
    KMS_KEY_ALIAS: kmsKeyAliasOf(settings),
    EMAIL_SENDER: settings.emailSender,
    // The console's URL, or the name of the parameter the home stack writes it into (lib/app-url.ts).
    ...(settings.appUrl
      ? { APP_URL: settings.appUrl }
      : { APP_URL_PARAMETER: appUrlParameterName(settings) }),
    ...(settings.dataPlaneUrls ? { DATA_PLANE_URLS: JSON.stringify(settings.dataPlaneUrls) } : {}),
    NODE_OPTIONS: "--enable-source-maps",
  };
}

/** Bundling hooks that copy package files beside the bundle (`<outputDir>/<file name>`). */
function copyPackageFiles(files: readonly string[]): ICommandHooks {
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (inputDir, outputDir) =>
      files.map(
        (file) => `cp "${join(inputDir, "node_modules", file)}" "${join(outputDir, basename(file))}"`,
      ),
  };
}

export interface GatewayFunctionProps {
  /** kebab-case name; the entry point is `<functionsDir>/<name>.ts`. */
  readonly name: string;
  readonly settings: FunctionSettings;
  readonly description?: string;
  /** Defaults to 10 s: API Gateway gives up after 29 s, a route should answer well before. */
  readonly timeout?: Duration;
  /** Defaults to 1024 MB (on arm64 this also buys CPU, which shortens cold starts). */
  readonly memorySize?: number;
  readonly logRetention?: logs.RetentionDays;
  /** Directory of the entry points; tests point it at stubs. Defaults to functions/. */
  readonly functionsDir?: string;
  /** Files of installed packages (`<package>/<path>`) copied beside the bundle, for code that reads them. */
  readonly packageFiles?: readonly string[];
  /**
   * Build with code splitting (cdk/bundle.ts splitBundleOptions: our own esbuild call, since
   * NodejsFunction cannot split): modules reached through import() are not read at a cold start.
   * The data plane sets it.
   */
  readonly splitting?: boolean;
}

/**
 * Code of a split bundle (cdk/bundle.ts buildSplitBundle: the chunks, the sandbox entry and the
 * QuickJS wasm beside its loader): esbuild runs locally at synth (never Docker), handler
 * `index.handler`.
 */
function splitBundleCode(entry: string): lambda.Code {
  return lambda.Code.fromAsset(PROJECT_ROOT, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Required by the type; never pulled: local bundling always succeeds or throws.
      image: DockerImage.fromRegistry("dummy"),
      local: {
        tryBundle(outputDir: string) {
          buildSplitBundle(entry, outputDir);
          return true;
        },
      },
    },
  });
}

export class GatewayFunction extends Construct {
  /** A NodejsFunction, or a plain Function built by cdk/bundle.ts when `splitting` is set. */
  readonly function: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: GatewayFunctionProps) {
    super(scope, id);

    this.logGroup = new logs.LogGroup(this, "Logs", {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
    });
    this.role = new iam.Role(this, "Role", {
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      description: `${props.settings.appName} ${props.name} function`,
    });
    // Instead of AWSLambdaBasicExecutionRole (logs on every log group of the account).
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ["logs:CreateLogStream", "logs:PutLogEvents"],
        resources: [this.logGroup.logGroupArn],
      }),
    );

    const entry = join(props.functionsDir ?? DEFAULT_FUNCTIONS_DIR, `${props.name}.ts`);
    const common = {
      description: props.description,
      runtime: RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      tracing: lambda.Tracing.ACTIVE,
      timeout: props.timeout ?? Duration.seconds(10),
      memorySize: props.memorySize ?? 1024,
      role: this.role,
      logGroup: this.logGroup,
      environment: commonEnvironment(props.settings),
    };
    if (props.splitting && props.packageFiles?.length)
      throw new Error(`${props.name}: packageFiles are not supported with splitting`);
    this.function = props.splitting
      ? new lambda.Function(this, "Function", {
          ...common,
          code: splitBundleCode(entry),
          handler: "index.handler",
        })
      : new NodejsFunction(this, "Function", {
          ...common,
          entry,
          handler: "handler",
          projectRoot: PROJECT_ROOT,
          depsLockFilePath: join(PROJECT_ROOT, "package-lock.json"),
          bundling: {
            format: OutputFormat.ESM,
            target: ESBUILD_TARGET,
            minify: true,
            sourceMap: true,
            sourcesContent: false,
            mainFields: MAIN_FIELDS,
            banner: ESM_REQUIRE_BANNER,
            // Bundle the pinned AWS SDK (package-lock.json) instead of the runtime's copy.
            externalModules: [],
            // Bundle with the locally installed esbuild; never fall back to Docker.
            forceDockerBundling: false,
            ...(props.packageFiles?.length ? { commandHooks: copyPackageFiles(props.packageFiles) } : {}),
          },
        });

    // The statement CDK adds for Tracing.ACTIVE.
    Validations.of(this.role).acknowledge({
      id: wildcardResourceFinding(this, "*"),
      reason:
        "xray:PutTraceSegments and xray:PutTelemetryRecords (active tracing) support no resource-level permissions: AWS documents Resource '*' for them.",
    });
  }

  /** Set one more environment variable. */
  addEnvironment(key: string, value: string): this {
    this.function.addEnvironment(key, value);
    return this;
  }

  /**
   * Grant read ("RO") or read and write ("RW") on the given tables and their indexes: exactly the
   * actions of TABLE_READ_ACTIONS (+ TABLE_WRITE_ACTIONS), nothing else (no Scan, no table admin).
   */
  bindTable(tables: TableRef | readonly TableRef[], access: TableAccess): this {
    const list: readonly TableRef[] = Array.isArray(tables) ? tables : [tables as TableRef];
    const arns = list.map((table) => (typeof table === "string" ? table : table.tableArn));
    if (arns.length === 0) throw new Error(`${this.node.path}: bindTable needs at least one table`);
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: access === "RW" ? [...TABLE_READ_ACTIONS, ...TABLE_WRITE_ACTIONS] : [...TABLE_READ_ACTIONS],
        resources: arns.flatMap((arn) => [arn, `${arn}/index/*`]),
      }),
    );
    for (const arn of arns) {
      Validations.of(this.role).acknowledge({
        id: wildcardResourceFinding(this, `${arn}/index/*`),
        reason:
          "Query on the table's global secondary indexes: 'table/<name>/index/*' matches only that table's indexes.",
      });
    }
    return this;
  }

  /**
   * Item-level actions on one table, without its indexes: for a function that needs fewer than
   * bindTable's sets (the stream consumer reads meters and writes occurrences, nothing else).
   */
  allowTableItemActions(
    table: TableRef,
    actions: readonly (typeof TABLE_READ_ACTIONS | typeof TABLE_WRITE_ACTIONS)[number][],
  ): this {
    const arn = typeof table === "string" ? table : table.tableArn;
    this.role.addToPolicy(new iam.PolicyStatement({ actions: [...actions], resources: [arn] }));
    return this;
  }

  /**
   * UpdateItem on one table, only on items whose partition key starts with one of `prefixes`
   * (`dynamodb:LeadingKeys`): what a read-only route group writes for every request, its rate
   * window and its token's last use (REQUEST_ACCOUNTING_KEY_PREFIXES).
   */
  allowUpdatesUnder(table: TableRef, prefixes: readonly string[]): this {
    const arn = typeof table === "string" ? table : table.tableArn;
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ["dynamodb:UpdateItem"],
        resources: [arn],
        conditions: {
          "ForAllValues:StringLike": { "dynamodb:LeadingKeys": prefixes.map((prefix) => `${prefix}*`) },
        },
      }),
    );
    return this;
  }

  /**
   * dynamodb:UpdateItem on items under partition key `prefixes`, of the named attributes only
   * (fine-grained access control: the key attributes are listed too, and no update may return the
   * item's other attributes).
   */
  allowAttributeUpdatesUnder(
    table: TableRef,
    prefixes: readonly string[],
    attributes: readonly string[],
  ): this {
    const arn = typeof table === "string" ? table : table.tableArn;
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ["dynamodb:UpdateItem"],
        resources: [arn],
        conditions: {
          "ForAllValues:StringLike": { "dynamodb:LeadingKeys": prefixes.map((prefix) => `${prefix}*`) },
          "ForAllValues:StringEquals": { "dynamodb:Attributes": ["pKey", "sKey", ...attributes] },
          StringEqualsIfExists: { "dynamodb:ReturnValues": ["NONE", "UPDATED_NEW"] },
        },
      }),
    );
    return this;
  }

  /** ses:SendEmail from this one identity (address or domain) only. */
  allowSendEmail(identityArn: string): this {
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ["ses:SendEmail"], resources: [identityArn] }));
    return this;
  }

  /**
   * Envelope encryption of credential secrets: kms:GenerateDataKey and kms:Decrypt on the
   * gateway's key of each given region only (matched by its alias), and only with an encryption
   * context made of exactly clientId and credentialId (lib/vault/envelope.ts).
   */
  allowSecretKeys(regions: readonly string[], alias: string): this {
    const stack = Stack.of(this);
    for (const region of regions) {
      const resource = stack.formatArn({ service: "kms", region, resource: "key", resourceName: "*" });
      this.role.addToPolicy(
        new iam.PolicyStatement({
          actions: ["kms:GenerateDataKey", "kms:Decrypt"],
          resources: [resource],
          conditions: {
            "ForAnyValue:StringEquals": { "kms:ResourceAliases": alias },
            "ForAllValues:StringEquals": { "kms:EncryptionContextKeys": ["clientId", "credentialId"] },
          },
        }),
      );
      Validations.of(this.role).acknowledge({
        id: wildcardResourceFinding(this, resource),
        reason:
          "The key ARN is not known to this stack (it lives in each regional stack); the statement is narrowed to the key carrying the gateway's alias (kms:ResourceAliases) and to the credential encryption context.",
      });
    }
    return this;
  }

  /**
   * Signing with an asymmetric key that never leaves KMS (the MCP endpoint's OAuth access tokens):
   * kms:Sign and kms:GetPublicKey on that one key, nothing else (no Verify: verification uses the
   * public key locally; no Decrypt, no key administration).
   */
  allowSigningKey(key: kms.IKey): this {
    this.role.addToPolicy(
      new iam.PolicyStatement({ actions: ["kms:Sign", "kms:GetPublicKey"], resources: [key.keyArn] }),
    );
    return this;
  }

  /**
   * An alarm raised by any failed invocation (an uncaught error or a timeout) in 5 minutes: the
   * stream consumers and the MCP endpoint have one each. Created in `scope` with `id`.
   */
  errorsAlarm(scope: Construct, id: string, description: string): cloudwatch.Alarm {
    return new cloudwatch.Alarm(scope, id, {
      alarmDescription: description,
      metric: this.function.metricErrors({ period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM }),
      ...ALARM_ON_ANY,
    });
  }

  /** secretsmanager:GetSecretValue on this one secret (give its full ARN, random suffix included). */
  /** ssm:GetParameter on one parameter (by ARN: a built string, so no reference to the parameter). */
  allowReadParameter(parameterArn: string): this {
    this.role.addToPolicy(
      new iam.PolicyStatement({ actions: ["ssm:GetParameter"], resources: [parameterArn] }),
    );
    return this;
  }

  allowReadSecret(secretArn: string): this {
    this.role.addToPolicy(
      new iam.PolicyStatement({ actions: ["secretsmanager:GetSecretValue"], resources: [secretArn] }),
    );
    return this;
  }
}
