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

const kinesisCommand = <Input extends object, Output>(
  operation: string,
  fromWire: (output: WireOutput) => unknown = (output) => output,
) => commandClass<Input, Output>(operation, (input) => input, fromWire);

type WireRecord = Record<string, unknown> & { Data: string; ApproximateArrivalTimestamp?: number };

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
