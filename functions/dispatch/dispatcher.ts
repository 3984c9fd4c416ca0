import type { Logger } from '@aws-lambda-powertools/logger';
import type { KinesisStreamBatchResponse, KinesisStreamEvent, KinesisStreamRecord } from 'aws-lambda';
import { admissionEnvelope, type LogRecord, type RangeAdmission } from '../admission/range-admission.js';
import { namespaceParts, type TenantConfig, tenantStreams } from '../core/config.js';
import type { AdmissionLags } from '../store/admission-lags.js';

/**
 * dispatch: admits a shard's records into the lease layer (admission/range-admission.ts), up to
 * `window_size` unfinished per queue.
 *
 * A queue's own stream (every envelope on it is the queue's): when the window is full it reports the first record it could not admit as
 * failed, so the event source mapping retries from there and the backlog stays in Kinesis.
 * A shared stream: one queue's full window must not hold the others' records back, so dispatch
 * passes over that queue's records on the shard and notes a lag (store/admission-lags.ts); the
 * sweep admits them from the log (admission/lag-catch-up.ts).
 */

export interface DispatcherDeps {
  tenant: TenantConfig;
  admission: RangeAdmission;
  lags: AdmissionLags;
  logger: Logger;
}

export class Dispatcher {
  private readonly queuesOf: Map<string, string[]>;

  constructor(private readonly deps: DispatcherDeps) {
    this.queuesOf = new Map([...tenantStreams(deps.tenant)].map(([name, s]) => [name, s.queues]));
  }

  async handle(event: KinesisStreamEvent): Promise<KinesisStreamBatchResponse> {
    const first = event.Records[0];
    const last = event.Records.at(-1);
    if (!first || !last) return { batchItemFailures: [] };
    const queues = this.queuesOf.get(streamOf(first.eventSourceARN));
    if (!queues) throw new Error(`dispatch is not configured for ${first.eventSourceARN}`);
    const shard = first.eventID.split(':')[0] as string;
    const [only] = queues;
    const own = only !== undefined && !this.config(only).shared_stream;
    const byQueue = this.byQueue(event.Records, own ? only : undefined, queues);
    if (own) {
      const records = byQueue.get(only) ?? [];
      const taken = await this.deps.admission.admit(only, this.config(only), shard, records);
      const blocked = records[taken];
      return { batchItemFailures: blocked ? [{ itemIdentifier: blocked.sequence }] : [] };
    }
    if (!byQueue.size) return { batchItemFailures: [] };
    const lagging = new Set(
      (await this.deps.lags.all()).filter((l) => l.shard === shard).map((l) => l.queue),
    );
    const through = last.kinesis.sequenceNumber;
    await Promise.all(
      [...byQueue].map(([queue, records]) =>
        this.admitShared(queue, shard, records, through, lagging.has(queue)),
      ),
    );
    return { batchItemFailures: [] };
  }

  /**
   * One queue's records of a shared stream's batch. While it lags, they are left to the sweep's
   * catch-up, which reads them from the log; a lag that ended meanwhile was caught up to before
   * this batch, so its records join on without a gap.
   */
  private async admitShared(
    queue: string,
    shard: string,
    records: readonly LogRecord[],
    through: string,
    lagging: boolean,
  ): Promise<void> {
    if (lagging && (await this.deps.lags.extend(queue, shard, through))) return;
    try {
      const taken = await this.deps.admission.admit(queue, this.config(queue), shard, records, {
        waitForRoom: false,
      });
      if (taken < records.length) await this.deps.lags.begin(queue, shard, through);
    } catch (err) {
      this.deps.logger.warn('admission of a queue on a shared stream failed: the sweep catches it up', {
        queue,
        shard,
        error: String(err),
      });
      await this.deps.lags.begin(queue, shard, through);
    }
  }

  private config(queue: string) {
    const config = this.deps.tenant.queues[queue];
    if (!config) throw new Error(`dispatch received records of unknown queue ${queue}`);
    return config;
  }

  /**
   * The batch's envelopes by queue, in log order. A record that is not an envelope, or of a queue
   * the stream no longer carries, can never be delivered: it is logged and passed over.
   */
  private byQueue(
    records: readonly KinesisStreamRecord[],
    own: string | undefined,
    queues: readonly string[],
  ): Map<string, LogRecord[]> {
    const out = new Map<string, LogRecord[]>();
    for (const record of records) {
      const sequence = record.kinesis.sequenceNumber;
      let envelope: LogRecord['envelope'] | undefined;
      try {
        envelope = admissionEnvelope(Buffer.from(record.kinesis.data, 'base64'));
      } catch (err) {
        this.deps.logger.error('skipping a record that is not a leaseq envelope', {
          sequenceNumber: sequence,
          error: (err as Error).message,
        });
        continue;
      }
      if (!envelope) continue;
      const queue = own ?? namespaceParts(envelope.queue).queue;
      if (!queues.includes(queue)) {
        this.deps.logger.error('skipping a record of a queue this stream does not carry', {
          sequenceNumber: sequence,
          queue: envelope.queue,
        });
        continue;
      }
      const group = out.get(queue) ?? [];
      group.push({ sequence, envelope });
      out.set(queue, group);
    }
    return out;
  }
}

function streamOf(arn: string): string {
  return arn.slice(arn.indexOf('/') + 1);
}
