import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as s3 from 'aws-cdk-lib/aws-s3';

/**
 * Item reads and writes on the tenant table and its indexes. Written out instead of
 * `grantReadWriteData`, which also allows Scan, DescribeTable and the stream reads.
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
    resourceArns: [table.tableArn, `${table.tableArn}/index/*`],
  });
}

/** Claim-checked payloads (`claims/<queue>/…`) only: the rest of the bucket stays out of reach. */
export function grantClaimObjects(bucket: s3.IBucket, grantee: iam.IGrantable): iam.Grant {
  return iam.Grant.addToPrincipal({
    grantee,
    actions: ['s3:PutObject', 's3:GetObject'],
    resourceArns: [bucket.arnForObjects('claims/*')],
  });
}
