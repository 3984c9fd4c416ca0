import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
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

/** The table's own settings, which the sweep's drift check reads back (functions/sweep/drift-check.ts). */
export function grantTableDescribe(table: dynamodb.ITable, grantee: iam.IGrantable): iam.Grant {
  return iam.Grant.addToPrincipal({
    grantee,
    actions: ['dynamodb:DescribeTable', 'dynamodb:DescribeContinuousBackups'],
    resourceArns: [table.tableArn],
  });
}

/**
 * Reads of the table's stream, which Lambda makes for a function's trigger: written out instead
 * of `grantStreamRead`, whose ListStreams is on "*".
 */
export function grantTableStreamRead(table: dynamodb.ITable, grantee: iam.IGrantable): iam.Grant {
  return iam.Grant.addToPrincipal({
    grantee,
    actions: [
      'dynamodb:DescribeStream',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
      'dynamodb:ListStreams',
    ],
    resourceArns: [table.tableStreamArn as string],
  });
}

/**
 * Encrypt and Decrypt with the secrets key, and nothing else: written out instead of
 * `grantEncryptDecrypt`, which adds ReEncrypt* and GenerateDataKey* (wildcards the box never needs).
 */
export function grantSecretSealing(key: kms.IKey, grantee: iam.IGrantable): iam.Grant {
  return iam.Grant.addToPrincipal({
    grantee,
    actions: ['kms:Encrypt', 'kms:Decrypt'],
    resourceArns: [key.keyArn],
  });
}

const CLAIM_KEYS_REASON =
  'Claim-check objects are keyed claims/<queue>/<message id>/<sha256 of the payload>, made per ' +
  'message at produce time, so there is no fixed object ARN to grant.';
const SEGMENT_KEYS_REASON =
  'Segments are keyed segments/<queue>/<shard>/<sequence number of their first entry>, made per ' +
  'admitted batch, so there is no fixed object ARN to grant.';

/** Claim-checked payloads (`claims/<queue>/…`) only: the rest of the bucket stays out of reach. */
export function grantClaimObjects(bucket: s3.IBucket, grantee: iam.IGrantable): iam.Grant {
  return grantObjects(bucket, grantee, ['s3:PutObject', 's3:GetObject'], 'claims/*', CLAIM_KEYS_REASON);
}

/** Reads of one queue's claim-checked payloads (`claims/<queue>/…`): what a Lambda consumer restores. */
export function grantClaimReads(bucket: s3.IBucket, grantee: iam.IGrantable, queue: string): iam.Grant {
  return grantObjects(bucket, grantee, ['s3:GetObject'], `claims/${queue}/*`, CLAIM_KEYS_REASON);
}

/** The lease layer's large segments (`segments/…`): dispatch writes them, the api and the sweep read them. */
export function grantSegments(
  bucket: s3.IBucket,
  grantee: iam.IGrantable,
  access: 'write' | 'read' | 'read-write',
): iam.Grant {
  const actions = {
    write: ['s3:PutObject'],
    read: ['s3:GetObject'],
    'read-write': ['s3:GetObject', 's3:PutObject'],
  }[access];
  return grantObjects(bucket, grantee, actions, 'segments/*', SEGMENT_KEYS_REASON);
}

function grantObjects(
  bucket: s3.IBucket,
  grantee: iam.IGrantable,
  actions: string[],
  keys: string,
  why: string,
): iam.Grant {
  const grant = iam.Grant.addToPrincipal({ grantee, actions, resourceArns: [bucket.arnForObjects(keys)] });
  // The grant lands in the principal's policy: a role's DefaultPolicy, made by the grant.
  const principal = grantee.grantPrincipal;
  if (principal instanceof Construct) {
    acknowledgeNag(principal.node.tryFindChild('DefaultPolicy') ?? principal, {
      id: 'AwsSolutions-IAM5',
      reason:
        `${why} The wildcard stays under ${keys} of this stack's own bucket (its ARN, not a name ` +
        'pattern), which holds nothing but claim-checked payloads and segments: its access logs go ' +
        'to a bucket of their own.',
      appliesTo: [arnFinding(bucket, `/${keys}`)],
    });
  }
  return grant;
}
