import { type CfnResource, Stack, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

// Acknowledgements go through aws-cdk-lib's Validations and need no cdk-nag here, so LeaseqTenant
// loads without it: running the pack is the app's choice (applyNagChecks in infra/build-app.ts).

/** A cdk-nag rule acknowledged on one construct, its reason, and the findings it covers. */
export interface NagAcknowledgment {
  /** The rule, e.g. `AwsSolutions-IAM5`. */
  id: string;
  /** Why the finding is accepted here: specific to leaseq, read by whoever reviews the stack. */
  reason: string;
  /**
   * The granular findings acknowledged (`Resource::<Bucket1234.Arn>/claims/*`), for rules that
   * report them (IAM4, IAM5). Each one is acknowledged by itself: a new wildcard is a new finding.
   */
  appliesTo?: string[];
}

/**
 * Acknowledges findings on `scope` and the constructs under it, never on a stack or the app.
 * cdk-nag v3 has no `NagSuppressions`: a granular finding is acknowledged by its full id,
 * `AwsSolutions-IAM5[Resource::…]`, which is what `appliesTo` expands to.
 */
export function acknowledgeNag(scope: IConstruct, ...acks: NagAcknowledgment[]): void {
  if (Stack.isStack(scope) || scope.node.scope === undefined) {
    throw new Error(`cdk-nag findings are acknowledged on resources, not on ${scope.node.path || 'the app'}`);
  }
  for (const { id, reason, appliesTo } of acks) {
    const ids = appliesTo ? appliesTo.map((finding) => `${id}[${finding}]`) : [id];
    for (const full of ids) Validations.of(scope).acknowledge({ id: full, reason });
  }
}

/** The IAM5 finding of a policy resource `<resource's ARN><suffix>`, as cdk-nag spells it. */
export function arnFinding(resource: IConstruct, suffix: string): string {
  const cfn = resource.node.defaultChild as CfnResource;
  return `Resource::<${Stack.of(resource).getLogicalId(cfn)}.Arn>${suffix}`;
}
