import { Stack, type StackProps, Tags } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { LeaseqTenant, type LeaseqTenantProps } from './leaseq-tenant.js';

export interface TenantStackProps extends StackProps, LeaseqTenantProps {}

/** `cdk deploy -c tenant=<name>`'s stack, `Leaseq-<tenant>`: one LeaseqTenant and nothing else. */
export class TenantStack extends Stack {
  readonly tenant: LeaseqTenant;

  constructor(scope: Construct, id: string, props: TenantStackProps) {
    super(scope, id, props);
    // The ID `Default` adds nothing to the logical IDs, so they stay what they were when the
    // stack held these resources itself: a deployed table or stream (fixed names) is not replaced.
    this.tenant = new LeaseqTenant(this, 'Default', props);
    // On the stack too: CloudFormation tags the stack itself, and what it creates, with it.
    Tags.of(this).add('leaseq:tenant', this.tenant.config.tenant);
  }
}
