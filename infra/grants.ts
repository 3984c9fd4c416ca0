import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { GSI1 } from '../functions/store/keys.js';
import { acknowledgeNag, arnFinding } from './nag.js';

/**
 * Item reads and writes on the tenant table and its one index. Written out instead of
 * `grantReadWriteData`, which also allows Scan, DescribeTable and the stream reads, and names
 * the index (`/index/gsi1`) instead of `/index/*`.
 */
export function grantTableItems(table: dynamodb.ITable, grantee: iam.IGrantable): iam.Grant {
  return iam.Grant.addToPrincipal({
    grantee,
    actions: [
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:DeleteItem',
      'dynamodb:BatchGetItem',
      'dynamodb:BatchWriteItem',
      'dynamodb:Query',
      'dynamodb:ConditionCheckItem',
    ],
    resourceArns: [table.tableArn, `${table.tableArn}/index/${GSI1}`],
  });
}

/** Claim-checked payloads (`claims/<queue>/…`) only: the rest of the bucket stays out of reach. */
export function grantClaimObjects(bucket: s3.IBucket, grantee: iam.IGrantable): iam.Grant {
  const grant = iam.Grant.addToPrincipal({
    grantee,
    actions: ['s3:PutObject', 's3:GetObject'],
    resourceArns: [bucket.arnForObjects('claims/*')],
  });
  acknowledgeClaimWildcard(bucket, grantee, 'claims/*');
  return grant;
}

/** Reads of one queue's claim-checked payloads (`claims/<queue>/…`): what a Lambda consumer restores. */
export function grantClaimReads(bucket: s3.IBucket, grantee: iam.IGrantable, queue: string): iam.Grant {
  const grant = iam.Grant.addToPrincipal({
    grantee,
    actions: ['s3:GetObject'],
    resourceArns: [bucket.arnForObjects(`claims/${queue}/*`)],
  });
  acknowledgeClaimWildcard(bucket, grantee, `claims/${queue}/*`);
  return grant;
}

function acknowledgeClaimWildcard(bucket: s3.IBucket, grantee: iam.IGrantable, keys: string): void {
  // The grant lands in the principal's policy: a role's DefaultPolicy, made by the grant.
  const principal = grantee.grantPrincipal;
  if (!(principal instanceof Construct)) return;
  acknowledgeNag(principal.node.tryFindChild('DefaultPolicy') ?? principal, {
    id: 'AwsSolutions-IAM5',
    reason:
      'Claim-check objects are keyed claims/<queue>/<message id>/<sha256 of the payload>, made ' +
      'per message at produce time, so there is no fixed object ARN to grant. The wildcard stays ' +
      `under ${keys} of this stack's own claims bucket (its ARN, not a name pattern), which holds ` +
      'nothing but claim-checked payloads: its access logs go to a bucket of their own.',
    appliesTo: [arnFinding(bucket, `/${keys}`)],
  });
}
