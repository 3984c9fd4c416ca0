import type { Logger } from '@aws-lambda-powertools/logger';
import type { KinesisStreamBatchResponse, KinesisStreamEvent, KinesisStreamRecord } from 'aws-lambda';
import { admissionEnvelope, type RangeAdmission } from '../admission/range-admission.js';
import { streamName, type TenantConfig } from '../core/config.js';
import type { Envelope } from '../core/envelope.js';

/**
 * dispatch: admits a shard's records into the lease layer (admission/range-admission.ts), up to
 * `window_size` unfinished.
 * When the window is full it reports the first record it could not admit as failed, so the
 * event source mapping retries from there and the backlog stays in Kinesis.
 */

export interface DispatcherDeps {
  tenant: TenantConfig;
  admission: RangeAdmission;
  logger: Logger;
}

interface Decoded {
  record: KinesisStreamRecord;
  envelope: Envelope;
}

export class Dispatcher {
  private readonly queueByStream: Map<string, string>;

  constructor(private readonly deps: DispatcherDeps) {
    this.queueByStream = new Map(
      Object.keys(deps.tenant.queues).map((q) => [streamName(deps.tenant.tenant, q), q]),
    );
  }

  async handle(event: KinesisStreamEvent): Promise<KinesisStreamBatchResponse> {
    const first = event.Records[0];
    if (!first) return { batchItemFailures: [] };
    const queue = this.queueOf(first.eventSourceARN);
    const config = this.deps.tenant.queues[queue];
    if (!config) throw new Error(`dispatch received records of unknown queue ${queue}`);
    const shard = first.eventID.split(':')[0] as string;
    const decoded = event.Records.flatMap((record) => this.decode(record));
    const records = decoded.map((d) => ({ sequence: d.record.kinesis.sequenceNumber, envelope: d.envelope }));
    const taken = await this.deps.admission.admit(queue, config, shard, records);
    const blocked = decoded[taken];
    return {
      batchItemFailures: blocked ? [{ itemIdentifier: blocked.record.kinesis.sequenceNumber }] : [],
    };
  }

  private queueOf(arn: string): string {
    const stream = arn.slice(arn.indexOf('/') + 1);
    const queue = this.queueByStream.get(stream);
    if (!queue) throw new Error(`dispatch is not configured for stream ${stream}`);
    return queue;
  }

  /** A record that is not an envelope can never be delivered: it is logged and passed over, never retried. */
  private decode(record: KinesisStreamRecord): Decoded[] {
    try {
      const envelope = admissionEnvelope(Buffer.from(record.kinesis.data, 'base64'));
      return envelope ? [{ record, envelope }] : [];
    } catch (err) {
      this.deps.logger.error('skipping a record that is not a leaseq envelope', {
        sequenceNumber: record.kinesis.sequenceNumber,
        error: (err as Error).message,
      });
      return [];
    }
  }
}
