import { DeleteCommand, type DocumentClient, GetCommand, QueryCommand } from '../aws/dynamodb.js';
import { namespaceParts, type QueueConfig } from '../core/config.js';
import type { BufferedAdds } from './buffered-adds.js';
import { buildKeyCondition } from './expression.js';
import { deadBytesKey, deadBytesPk, storageKey } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * Bytes a queue holds unconsumed (payloads accepted and not yet acked, purged or expired as dead
 * letters): ADD counters in one item per queue, read by the storage quota, written through
 * BufferedAdds (about once a second per instance). A pull queue has one (`bytes`); a push queue
 * one per Lambda consumer (`bytes@<consumer>`), since each consumer is done with a message on its
 * own: the queue holds what its slowest consumer has not finished. The item also keeps running
 * totals its writes carry at no extra cost: the bytes produced, a pull queue's acks and their bytes
 * (stats and usage totals), and the queue's requests by kind (store/counters.ts).
 * A dead letter holds its bytes until it is purged, or redriven and acked, or its DLQ retention
 * ends. DynamoDB's TTL deletes it without telling anyone, so its bytes (and a count of it) are also
 * added to a bucket of the hour it expires in (`Q#<ns>#SX`); the sweep frees a bucket once its hour
 * has passed, and counts the dead letters that expired in it.
 */

const HOUR_MS = 3_600_000;

export class StorageMeter {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
    private readonly buffer: BufferedAdds,
  ) {}

  /** What the queue holds: the most any of its readers has not finished. */
  async used(queue: string, config: QueueConfig): Promise<number> {
    return Math.max(0, ...Object.values(await this.byReader(queue, config)));
  }

  /**
   * What each reader of the queue has not finished: the queue itself (pull), or each Lambda
   * consumer by name; the stored counters and what this instance has not written yet.
   */
  async byReader(queue: string, config: QueueConfig): Promise<Record<string, number>> {
    const key = storageKey(queue);
    const out = await this.doc.send(new GetCommand({ TableName: this.table, Key: key }));
    return Object.fromEntries(
      readers(queue, config).map(({ name, attribute }) => [
        name,
        Math.max(0, Number(out.Item?.[attribute] ?? 0) + this.buffer.unwritten(key, attribute)),
      ]),
    );
  }

  /**
   * Accepted messages' bytes, held by every reader of the queue until each is done with them; by
   * one Lambda consumer only when `namespace` is its (a replay for that consumer).
   */
  add(
    namespace: string,
    config: QueueConfig,
    bytes: number,
    totals: Record<string, number> = {},
  ): Promise<void> {
    const { queue, consumer } = namespaceParts(namespace);
    const holders = readers(queue, config).filter((r) => consumer === undefined || r.name === consumer);
    return this.buffer.add(storageKey(queue), {
      ...Object.fromEntries(holders.map(({ attribute }) => [attribute, bytes])),
      ...totals,
    });
  }

  /** Bytes the producer accepted: held as `add` holds them, and counted in the produced total. */
  produced(queue: string, config: QueueConfig, bytes: number): Promise<void> {
    return this.add(queue, config, bytes, { produced_bytes: bytes });
  }

  /**
   * A reader is done with messages (`namespace`: the queue, or a consumer's): their bytes are
   * freed. `acked` of them were acked (a pull queue's total; a purge or an expiry frees none acked).
   */
  release(namespace: string, bytes: number, acked: number): Promise<void> {
    const { queue, consumer } = namespaceParts(namespace);
    return this.buffer.add(
      storageKey(queue),
      consumer === undefined
        ? { bytes: -bytes, acked, ...(acked ? { acked_bytes: bytes } : {}) }
        : { [consumerAttribute(consumer)]: -bytes },
    );
  }

  /** A message died: its bytes leave with its DLQ retention (`expiresAt`, epoch ms) at the latest. */
  deadLettered(namespace: string, bytes: number, expiresAt: number): Promise<void> {
    return this.buffer.add(deadBytesKey(namespace, hourOf(expiresAt)), { bytes, letters: 1 });
  }

  /** A dead letter left the DLQ before its expiry (purged, or redriven): not its bucket's any more. */
  leftDlq(namespace: string, bytes: number, expiresAt: number): Promise<void> {
    return this.buffer.add(deadBytesKey(namespace, hourOf(expiresAt)), { bytes: -bytes, letters: -1 });
  }

  /**
   * The sweep: frees the bytes of dead letters whose retention ended (each bucket whose hour has
   * passed, deleted as it is freed). A bucket changed meanwhile is left for the next pass; a crash
   * between the delete and the release leaves those bytes counted (the quota errs on the safe side).
   * Answers the bytes freed, how many dead letters expired with them (`dlq_expired`), and the bytes
   * of dead letters still held (the later buckets: the usage's DLQ bytes, read in the same query).
   */
  async expireDeadLetters(
    namespace: string,
    now: number,
  ): Promise<{ bytes: number; letters: number; held: number }> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        ...buildKeyCondition('#pk = :pk', { ':pk': deadBytesPk(namespace) }),
      }),
    );
    const current = deadBytesKey(namespace, hourOf(now)).sk;
    let freed = 0;
    let letters = 0;
    let held = 0;
    for (const item of out.Items ?? []) {
      const bytes = Number(item.bytes ?? 0);
      if (String(item.sk) >= current) {
        held += bytes;
        continue;
      }
      try {
        await this.doc.send(
          new DeleteCommand({
            TableName: this.table,
            Key: { pk: item.pk, sk: item.sk },
            // Unchanged since it was read: neither a late dead letter nor a purge is lost.
            ConditionExpression: `#bytes = :bytes AND ${item.letters === undefined ? 'attribute_not_exists(#letters)' : '#letters = :letters'}`,
            ExpressionAttributeNames: { '#bytes': 'bytes', '#letters': 'letters' },
            ExpressionAttributeValues: {
              ':bytes': item.bytes,
              ...(item.letters === undefined ? {} : { ':letters': item.letters }),
            },
          }),
        );
      } catch (err) {
        if (isConditionFailed(err)) {
          held += bytes;
          continue;
        }
        throw err;
      }
      freed += bytes;
      letters += Number(item.letters ?? 0);
    }
    if (freed) await this.release(namespace, freed, 0);
    return { bytes: freed, letters, held: Math.max(0, held) };
  }
}

function consumerAttribute(consumer: string): string {
  return `bytes@${consumer}`;
}

function readers(queue: string, config: QueueConfig): { name: string; attribute: string }[] {
  return config.consumers.length
    ? config.consumers.map((c) => ({ name: c.name, attribute: consumerAttribute(c.name) }))
    : [{ name: queue, attribute: 'bytes' }];
}

function hourOf(ms: number): number {
  return Math.floor(ms / HOUR_MS);
}
