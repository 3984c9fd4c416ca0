import { CfnOutput, Duration } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import type { QueueConfig } from '../functions/core/config.js';

/** Enhanced fan-out consumers Kinesis registers on one stream. */
const FAN_OUT_CONSUMERS = 20;

/** How a subscribed function is fed; everything else about the subscription is fixed by `subscribe`. */
export interface QueueSubscriptionOptions {
  /** Records per invocation (1-10,000). Default 100. */
  batchSize?: number;
  /** How long to gather records before invoking (≤ 5 min). Default 0: invoke as soon as records arrive. */
  maxBatchingWindow?: Duration;
}

export interface LogStreamProps {
  /** The Kinesis stream's name (QueueConfig.stream). */
  streamName: string;
  shards: number;
  retentionHours: number;
  /**
   * Each subscribed function reads through a consumer of its own on enhanced fan-out: pushed
   * records, outside the shard's five reads a second (docs/streams.md, "Fan-out").
   */
  fanOut: boolean;
  /** The queues whose messages it carries. */
  queues: readonly string[];
}

/**
 * A stream of the log (docs/streams.md): a queue's own, or one the tenant's queues share. Grants
 * are methods here so every function that touches a queue's log gets the same, minimal set of
 * actions.
 */
export class LogStream extends Construct {
  readonly stream: kinesis.Stream;

  private readonly fanOut: boolean;
  private fanOutConsumers = 0;

  constructor(scope: Construct, id: string, props: LogStreamProps) {
    super(scope, id);
    this.fanOut = props.fanOut;
    this.stream = new kinesis.Stream(this, 'Stream', {
      streamName: props.streamName,
      streamMode: kinesis.StreamMode.PROVISIONED,
      shardCount: props.shards,
      retentionPeriod: Duration.hours(props.retentionHours),
      // The AWS-managed key (aws/kinesis): encrypted at rest with no key policy or grants to keep.
      encryption: kinesis.StreamEncryption.MANAGED,
    });
    // Inside the construct so the output's id is unique whatever the stream's name.
    new CfnOutput(this, 'StreamName', {
      value: this.stream.streamName,
      description: `Kinesis stream of ${props.queues.length > 1 ? 'queues' : 'queue'} ${props.queues.join(', ')}`,
    });
  }

  /** What a producer (api, sweep) needs to append to the log: PutRecords, and the shard map to route keys. */
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

  /** What a stream consumer (an event source mapping's function) needs to read the log. */
  grantConsume(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee,
      actions: [
        'kinesis:GetRecords',
        'kinesis:GetShardIterator',
        'kinesis:DescribeStream',
        'kinesis:DescribeStreamSummary',
        'kinesis:ListShards',
        'kinesis:ListStreams',
      ],
      resourceArns: [this.stream.streamArn],
    });
  }

  /**
   * Feeds the stream to `fn` with the settings the queue's contract depends on: from the oldest
   * record, one batch per shard at a time (order within a shard), per-record failures reported
   * instead of failing the batch, and a failed batch retried until its records expire, never
   * split or skipped: what a consumer cannot take yet stays in the log.
   */
  subscribe(fn: lambda.IFunction, options: QueueSubscriptionOptions = {}): lambda.EventSourceMapping {
    const grant = this.grantConsume(fn);
    const fanOut = this.fanOut ? this.fanOutConsumer(fn) : undefined;
    const mapping = fn.addEventSourceMapping(this.node.id, {
      eventSourceArn: fanOut?.consumer.streamConsumerArn ?? this.stream.streamArn,
      startingPosition: lambda.StartingPosition.TRIM_HORIZON,
      batchSize: options.batchSize ?? 100,
      maxBatchingWindow: options.maxBatchingWindow ?? Duration.seconds(0),
      parallelizationFactor: 1,
      reportBatchItemFailures: true,
      bisectBatchOnError: false,
      // -1 is infinite; maxRecordAge is left unset because its infinite (-1) is not a Duration.
      retryAttempts: -1,
    });
    // Lambda checks the role can read the stream (and subscribe) when the mapping is created.
    grant.applyBefore(mapping);
    fanOut?.grant.applyBefore(mapping);
    return mapping;
  }

  /**
   * Busy-time fan-out (`fan_out: "when_busy"`, functions/core/fan-out-switch.ts): who registers
   * and deregisters the stream's consumer at run time (the sweep, and the stack's release).
   */
  grantConsumerSwitch(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee,
      actions: [
        'kinesis:DescribeStreamSummary',
        'kinesis:RegisterStreamConsumer',
        'kinesis:DescribeStreamConsumer',
        'kinesis:DeregisterStreamConsumer',
      ],
      resourceArns: [this.stream.streamArn, this.consumers()],
    });
  }

  /** Dispatch, pushed through the consumer the sweep registers while the stream is busy. */
  grantBusyPush(dispatch: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee: dispatch,
      actions: ['kinesis:SubscribeToShard', 'kinesis:DescribeStreamConsumer'],
      resourceArns: [this.consumers()],
    });
  }

  private consumers(): string {
    return `${this.stream.streamArn}/consumer/*`;
  }

  /** A stream consumer of `fn`'s own (one subscription per shard each), and the grants to be pushed by it. */
  private fanOutConsumer(fn: lambda.IFunction): { consumer: kinesis.StreamConsumer; grant: iam.Grant } {
    if (++this.fanOutConsumers > FAN_OUT_CONSUMERS)
      throw new Error(
        `${this.node.id}: Kinesis registers at most ${FAN_OUT_CONSUMERS} fan-out consumers a stream, one a subscribed function: fewer Lambda consumers, or no fan_out`,
      );
    const consumer = new kinesis.StreamConsumer(this, `FanOut-${fn.node.id}`, {
      stream: this.stream,
      // Consumer names are [a-zA-Z0-9_.-]; a Lambda consumer's id carries its namespace's `~`.
      streamConsumerName: fn.node.id.replace(/[^a-zA-Z0-9_.-]/g, '-'),
    });
    const grant = iam.Grant.addToPrincipal({
      grantee: fn,
      actions: ['kinesis:SubscribeToShard', 'kinesis:DescribeStreamConsumer'],
      resourceArns: [consumer.streamConsumerArn],
    });
    return { consumer, grant };
  }
}

/** A queue of the tenant and the stream its messages are appended to. */
export class TenantQueue {
  constructor(
    readonly name: string,
    readonly config: QueueConfig,
    readonly log: LogStream,
  ) {}

  get stream(): kinesis.Stream {
    return this.log.stream;
  }
}
