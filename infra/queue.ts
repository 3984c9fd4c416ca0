import { CfnOutput, Duration } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import { Construct } from 'constructs';
import { type QueueConfig, streamName } from '../functions/core/config.js';

export interface QueueConstructProps {
  tenant: string;
  name: string;
  /** The queue's settings with defaults filled in (parseTenantConfig). */
  config: QueueConfig;
}

/**
 * One queue's AWS resources: its Kinesis stream (the log). Grants to the queue are methods here
 * so every function that touches the queue gets the same, minimal set of actions.
 */
export class QueueConstruct extends Construct {
  readonly name: string;
  readonly config: QueueConfig;
  readonly stream: kinesis.Stream;

  constructor(scope: Construct, id: string, props: QueueConstructProps) {
    super(scope, id);
    this.name = props.name;
    this.config = props.config;
    this.stream = new kinesis.Stream(this, 'Stream', {
      streamName: streamName(props.tenant, props.name),
      streamMode: kinesis.StreamMode.PROVISIONED,
      shardCount: props.config.shards,
      retentionPeriod: Duration.hours(props.config.retention_hours),
      // The AWS-managed key (aws/kinesis): encrypted at rest with no key policy or grants to keep.
      encryption: kinesis.StreamEncryption.MANAGED,
    });
    // Inside the construct so the output's id is unique whatever the queue name.
    new CfnOutput(this, 'StreamName', {
      value: this.stream.streamName,
      description: `Kinesis stream of queue ${props.name}`,
    });
  }

  /** What the api function needs to append to the log (PutRecords, and the shard map to route keys). */
  grantProduce(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee,
      actions: [
        'kinesis:PutRecords',
        'kinesis:PutRecord',
        'kinesis:DescribeStreamSummary',
        'kinesis:ListShards',
      ],
      resourceArns: [this.stream.streamArn],
    });
  }
}
