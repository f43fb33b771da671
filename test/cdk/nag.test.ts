/**
 * cdk-nag v3 runs as a CDK policy-validation plugin and reports through validateScope()/synthesis,
 * not through annotations: these tests read its report directly, for every stack of the app.
 */
import { type Stack, Validations } from "aws-cdk-lib";
import { Annotations, Match } from "aws-cdk-lib/assertions";
import * as kms from "aws-cdk-lib/aws-kms";
import { AwsSolutionsChecks } from "cdk-nag";
import type { IConstruct } from "constructs";
import { describe, expect, it } from "vitest";
import { ACCOUNT, buildTestApp, CDK_CONTEXT } from "./helpers.ts";

type Violation = ReturnType<AwsSolutionsChecks["validateScope"]>["violations"][number];
const summary = (violations: Violation[]) =>
  violations.flatMap((v) =>
    v.violatingResources.map((r) => `${v.severity} ${v.ruleName} at ${r.constructPath}`),
  );

/** The same pack with every acknowledgement ignored: what the app would report without them. */
class UnacknowledgedChecks extends AwsSolutionsChecks {}
Object.defineProperty(UnacknowledgedChecks.prototype, "isAcknowledged", { value: () => false });

interface Acknowledgement {
  path: string;
  id: string;
  reason: string;
}
function acknowledgementsIn(scope: IConstruct): Acknowledgement[] {
  return scope.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          path: construct.node.path,
          id: id.replace(/^annotation::/i, ""),
          reason,
        })),
      ),
  );
}

const homeRegion = String(CDK_CONTEXT.homeRegion);
const variants = [
  ["cdk.json context, account-agnostic", {}, {}],
  [
    "a pinned account, a Stripe secret and data-plane URLs",
    {
      stripeSecretArn: `arn:aws:secretsmanager:${homeRegion}:${ACCOUNT}:secret:stripe-AbCdEf`,
      dataPlaneUrls: { [homeRegion]: "https://data.example.com" },
    },
    { account: ACCOUNT },
  ],
] as const;

describe("cdk-nag AwsSolutions", () => {
  it.each(variants)("%s: no unacknowledged error or warning in any stack", (_, context, options) => {
    const { app, regionalStacks, homeStack } = buildTestApp(context, { ...options, nag: false });
    const violations = new AwsSolutionsChecks().validateScope(app).violations;
    expect(summary(violations.filter((v) => v.severity === "error"))).toEqual([]);
    expect(summary(violations.filter((v) => v.severity === "warning"))).toEqual([]);
    for (const stack of [...Object.values(regionalStacks), homeStack]) {
      const annotations = Annotations.fromStack(stack);
      expect(annotations.findError("*", Match.anyValue())).toEqual([]);
      expect(annotations.findWarning("*", Match.stringLikeRegexp("AwsSolutions-.*"))).toEqual([]);
    }
  });

  it("is registered by buildApp, and the app synthesizes with it (as `cdk synth` does)", () => {
    const { app } = buildTestApp();
    expect(() => app.synth()).not.toThrow();
  });

  it("is live: an unrotated key added to a regional stack fails the checks", () => {
    const { app, regionalStacks } = buildTestApp({}, { nag: false });
    new kms.Key(regionalStacks[homeRegion] as Stack, "UnrotatedKey");
    const rules = new AwsSolutionsChecks().validateScope(app).violations.map((v) => v.ruleName);
    expect(rules).toEqual(["AwsSolutions-KMS5"]);
  });

  describe("acknowledgements", () => {
    const { app } = buildTestApp({}, { nag: false });
    const acknowledgements = acknowledgementsIn(app);
    const raw = new UnacknowledgedChecks().validateScope(app).violations;
    const findings = raw.flatMap((v) =>
      v.violatingResources.map((r) => ({ id: v.ruleName, path: r.constructPath ?? "" })),
    );
    const covers = (ack: Acknowledgement, finding: { id: string; path: string }) =>
      ack.id === finding.id && (finding.path === ack.path || finding.path.startsWith(`${ack.path}/`));

    it("are few, of known kinds, and scoped", () => {
      const appName = String(CDK_CONTEXT.appName);
      const kinds = [
        /^AwsSolutions-IAM5\[Resource::\*\]$/,
        new RegExp(
          `^AwsSolutions-IAM5\\[Resource::arn:aws:dynamodb:[a-z0-9-]+:<AWS::AccountId>:table/${appName}/index/\\*\\]$`,
        ),
        /^AwsSolutions-IAM5\[Resource::arn:aws:kms:[a-z0-9-]+:<AWS::AccountId>:key\/\*\]$/,
        /^AwsSolutions-IAM5\[Resource::<DataTable[A-F0-9]+\.Arn>\/index\/\*\]$/,
        /^AwsSolutions-APIG2$/,
        /^AwsSolutions-APIG3$/,
        /^AwsSolutions-APIG6$/,
        /^AwsSolutions-SQS3$/,
        // The web console (cdk/constructs/console-site.ts): distribution, log bucket, and the
        // grants aws-cdk-lib writes for its own BucketDeployment handler.
        /^AwsSolutions-CFR[124]$/,
        // aws-cdk-lib's own, on the log bucket it gives the LogDeliveryWrite ACL (S3 server access logs).
        /^CloudFormation-Validate::W3045$/,
        /^AwsSolutions-L1$/,
        /^AwsSolutions-IAM4\[Policy::arn:<AWS::Partition>:iam::aws:policy\/service-role\/AWSLambdaBasicExecutionRole\]$/,
        /^AwsSolutions-IAM5\[Action::s3:[A-Za-z]+\*\]$/,
        /^AwsSolutions-IAM5\[Resource::<ConsoleBucket[A-F0-9]+\.Arn>\/\*\]$/,
        /^AwsSolutions-IAM5\[Resource::arn:aws:s3:::cdk-[a-z0-9]+-assets-<AWS::AccountId>-[a-z0-9-]+\/\*\]$/,
      ];
      expect(acknowledgements.length).toBeGreaterThan(0);
      for (const ack of acknowledgements) {
        expect(
          kinds.some((kind) => kind.test(ack.id)),
          ack.id,
        ).toBe(true);
        // Never on a whole stack: on the role, the API or the stage concerned.
        expect(ack.path.split("/").length, `${ack.id} at ${ack.path}`).toBeGreaterThan(1);
      }
      const iam5 = acknowledgements.filter((ack) => ack.id.startsWith("AwsSolutions-IAM5"));
      for (const ack of iam5)
        expect(ack.path).toMatch(/\/Role$|\/Custom::CDKBucketDeployment[A-F0-9]+\/ServiceRole$/);
      // The BucketDeployment handler's findings, and only those, are acknowledged on its role.
      const handlerAcks = acknowledgements.filter((ack) => ack.path.includes("/Custom::CDKBucketDeployment"));
      expect(handlerAcks.every((ack) => /^AwsSolutions-(IAM4|IAM5|L1)/.test(ack.id))).toBe(true);
    });

    it("each carry a specific reason", () => {
      for (const ack of acknowledgements) expect(ack.reason.length, ack.id).toBeGreaterThanOrEqual(60);
    });

    it("each silence at least one real finding (none is stale)", () => {
      expect(findings.length).toBeGreaterThan(0);
      // aws-cdk-lib's own acknowledgements (CloudFormation-Validate::*) are not cdk-nag's.
      const unused = acknowledgements
        .filter((ack) => ack.id.startsWith("AwsSolutions-"))
        .filter((ack) => !findings.some((finding) => covers(ack, finding)));
      expect(unused).toEqual([]);
    });

    it("cover every finding the pack would otherwise report", () => {
      const uncovered = findings.filter((finding) => !acknowledgements.some((ack) => covers(ack, finding)));
      expect(uncovered).toEqual([]);
    });
  });
});
