import type { KinesisStreamRecord } from 'aws-lambda';
import { type Envelope, encodeEnvelope } from '../../functions/core/envelope.js';
import type { StreamRecord } from './runtime.js';

/** A record as GetRecords returns it, its data still the bytes on the stream. */
export interface RawStreamRecord {
  shardId: string;
  sequenceNumber: string;
  partitionKey: string;
  data: Uint8Array;
  /** Epoch milliseconds; default now. */
  arrivedAt?: number;
}

/** A record of `stream` as Lambda's event source mapping hands it to a function, from its bytes. */
export function kinesisRecordOf(r: RawStreamRecord, stream: string): KinesisStreamRecord {
  return {
    kinesis: {
      kinesisSchemaVersion: '1.0',
      partitionKey: r.partitionKey,
      sequenceNumber: r.sequenceNumber,
      data: Buffer.from(r.data).toString('base64'),
      approximateArrivalTimestamp: (r.arrivedAt ?? Date.now()) / 1000,
    },
    eventSource: 'aws:kinesis',
    eventVersion: '1.0',
    eventID: `${r.shardId}:${r.sequenceNumber}`,
    eventName: 'aws:kinesis:record',
    invokeIdentityArn: 'arn:aws:iam::000000000000:role/test',
    awsRegion: 'us-east-1',
    eventSourceARN: `arn:aws:kinesis:us-east-1:000000000000:stream/${stream}`,
  };
}

/** A record of `stream` as Lambda's event source mapping hands it to a function, for direct invocations. */
export function kinesisRecord(r: StreamRecord, stream: string): KinesisStreamRecord {
  return kinesisRecordOf({ ...r, data: encodeEnvelope(r.envelope) }, stream);
}

/** The same for an envelope made up by a test, at a position it chose. */
export function madeUpRecord(envelope: Envelope, shardId: string, sequenceNumber: string, stream: string) {
  return kinesisRecord(
    { shardId, sequenceNumber, partitionKey: envelope.key ?? envelope.message_id, envelope },
    stream,
  );
}
