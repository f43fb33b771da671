/**
 * cdk-nag (v3) wiring. The AwsSolutions pack runs as a CDK policy-validation plugin: any finding
 * that is not acknowledged (error or warning) fails `cdk synth`. Acknowledgements are made with
 * CDK's `Validations.of(construct).acknowledge({ id, reason })` next to the resource concerned,
 * each for one exact finding; cdk/README.md lists them all with their reasons.
 */
import { type IResolvable, Stack, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import type { IConstruct } from "constructs";

export function addNagChecks(scope: IConstruct): AwsSolutionsChecks {
  const checks = new AwsSolutionsChecks(scope);
  Validations.of(scope).addPlugins(checks);
  return checks;
}

type CfnValue = string | number | boolean | null | undefined | CfnValue[] | { [key: string]: CfnValue };

/**
 * The string cdk-nag reports for a resolved CloudFormation value: references become `<Name>` and
 * `<Resource.Attribute>`, joins are flattened (the same rendering as cdk-nag's IAM5 findings).
 */
function flatten(value: CfnValue): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value.replace(/\$\{/g, "<").replace(/\}/g, ">");
  if (typeof value !== "object" || Array.isArray(value)) return JSON.stringify(value);
  const join = value["Fn::Join"];
  if (Array.isArray(join)) {
    const [delimiter, items] = join;
    return Array.isArray(items) ? items.map(flatten).join(String(delimiter)) : JSON.stringify(value);
  }
  if (value["Fn::Sub"] !== undefined) return flatten(value["Fn::Sub"]);
  const getAtt = value["Fn::GetAtt"];
  if (Array.isArray(getAtt)) return `<${flatten(getAtt[0])}.${flatten(getAtt[1])}>`;
  if (value["Fn::ImportValue"] !== undefined) return flatten(value["Fn::ImportValue"]);
  if (value.Ref !== undefined) return `<${flatten(value.Ref)}>`;
  return JSON.stringify(value);
}

/** The id of the AwsSolutions-IAM5 finding for one wildcard resource of a policy in `scope`'s stack. */
export function wildcardResourceFinding(scope: IConstruct, resource: string | IResolvable): string {
  const resolved = Stack.of(scope).resolve(resource) as CfnValue;
  return `AwsSolutions-IAM5[Resource::${flatten(resolved)}]`;
}
