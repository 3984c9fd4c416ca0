import type * as K from '@aws-sdk/client-kinesis';
import { AwsJsonClient, type AwsJsonClientConfig, commandClass, type WireOutput } from './aws-json.js';

/**
 * The Kinesis calls leaseq makes, with the SDK's names, inputs and outputs (typed from
 * `@aws-sdk/client-kinesis`), over the lean JSON client (aws/aws-json.ts). Records' data and
 * timestamps are converted as the SDK converts them: base64 to bytes, epoch seconds to dates.
 */

export const KINESIS = {
  name: 'Kinesis',
  signingName: 'kinesis',
  targetPrefix: 'Kinesis_20131202',
  jsonVersion: '1.1',
} as const;

export type KinesisClient = AwsJsonClient;

export function createKinesisClient(config: AwsJsonClientConfig): KinesisClient {
  return new AwsJsonClient(KINESIS, config);
}

/** Pure (esbuild drops the commands a bundle does not use). */
const kinesisCommand = /* @__NO_SIDE_EFFECTS__ */ <Input extends object, Output>(
  operation: string,
  fromWire: (output: WireOutput) => unknown = (output) => output,
) => commandClass<Input, Output>(operation, (input) => input, fromWire);

type WireRecord = Record<string, unknown> & { Data: string; ApproximateArrivalTimestamp?: number };
type WireConsumer = Record<string, unknown> & { ConsumerCreationTimestamp?: number };

/** A consumer's description with its creation time as a date (epoch seconds on the wire). */
const consumerFromWire = (consumer: WireConsumer | undefined) =>
  consumer && {
    ...consumer,
    ...(consumer.ConsumerCreationTimestamp !== undefined
      ? { ConsumerCreationTimestamp: new Date(consumer.ConsumerCreationTimestamp * 1000) }
      : {}),
  };

export const PutRecordsCommand = kinesisCommand<K.PutRecordsCommandInput, K.PutRecordsCommandOutput>(
  'PutRecords',
);
export const DescribeStreamSummaryCommand = kinesisCommand<
  K.DescribeStreamSummaryCommandInput,
  K.DescribeStreamSummaryCommandOutput
>('DescribeStreamSummary');
export const ListShardsCommand = kinesisCommand<K.ListShardsCommandInput, K.ListShardsCommandOutput>(
  'ListShards',
);
export const GetShardIteratorCommand = kinesisCommand<
  K.GetShardIteratorCommandInput,
  K.GetShardIteratorCommandOutput
>('GetShardIterator');
export const GetRecordsCommand = kinesisCommand<K.GetRecordsCommandInput, K.GetRecordsCommandOutput>(
  'GetRecords',
  (output) => ({
    ...output,
    Records: ((output.Records ?? []) as WireRecord[]).map((r) => ({
      ...r,
      Data: new Uint8Array(Buffer.from(r.Data, 'base64')),
      ...(r.ApproximateArrivalTimestamp !== undefined
        ? { ApproximateArrivalTimestamp: new Date(r.ApproximateArrivalTimestamp * 1000) }
        : {}),
    })),
  }),
);

/** Enhanced fan-out consumers: what a busy stream's dispatch mapping reads through (aws/fan-out-mappings.ts). */
export const RegisterStreamConsumerCommand = kinesisCommand<
  K.RegisterStreamConsumerCommandInput,
  K.RegisterStreamConsumerCommandOutput
>('RegisterStreamConsumer', (output) => ({
  ...output,
  Consumer: consumerFromWire(output.Consumer as WireConsumer | undefined),
}));
export const DescribeStreamConsumerCommand = kinesisCommand<
  K.DescribeStreamConsumerCommandInput,
  K.DescribeStreamConsumerCommandOutput
>('DescribeStreamConsumer', (output) => ({
  ...output,
  ConsumerDescription: consumerFromWire(output.ConsumerDescription as WireConsumer | undefined),
}));
export const DeregisterStreamConsumerCommand = kinesisCommand<
  K.DeregisterStreamConsumerCommandInput,
  K.DeregisterStreamConsumerCommandOutput
>('DeregisterStreamConsumer');
