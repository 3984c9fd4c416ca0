import { DeleteCommand, type DocumentClient, PutCommand, QueryCommand } from '../aws/dynamodb.js';
import { TTL_ATTRIBUTE, wakePk } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * Who waits on the wake channel for a queue's next admission: one small item per connection, in
 * one partition per queue, with how many messages its receive asked for, its lease, and when. A
 * receive that found nothing puts it; an admission takes the oldest until what they ask for covers
 * its new entries (not a stampede: every receiver woken for the same entries races for them), each
 * with a conditional delete, and only the taker posts its wake, so two admissions at once wake a
 * connection once. An item outlives a lost connection by its TTL at most (API Gateway closes a
 * connection after 2 hours).
 */

const KEEP_SECONDS = 2 * 60 * 60;

/** What a registered receive asked for, and the lease an admission writes when it hands it entries. */
export interface WaitingReceive {
  wants: number;
  /** Absent when the receive must not be handed entries (it answers to a byte quota): only woken. */
  lease?: { seconds: number; consumerId: string };
}

/** A connection taken for a wake, with what its receive asked for. */
export interface Registration extends WaitingReceive {
  connection: string;
}

export class WakeRegistrations {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  async register(queue: string, connection: string, receive: WaitingReceive, now: number): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          pk: wakePk(queue),
          sk: connection,
          wants: receive.wants,
          ...(receive.lease ? { lease_s: receive.lease.seconds, consumer: receive.lease.consumerId } : {}),
          at: now,
          [TTL_ATTRIBUTE]: Math.ceil(now / 1000) + KEEP_SECONDS,
        },
      }),
    );
  }

  /**
   * The oldest connections registered for the queue whose receives ask for `entries` in all (one
   * at least), each taken (deleted) by this call alone. Read consistently: a receive registers just
   * before its last look, and an admission right after that look must see it.
   */
  async take(queue: string, entries: number): Promise<Registration[]> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': wakePk(queue) },
        ProjectionExpression: 'sk, wants, lease_s, #c, #at',
        ExpressionAttributeNames: { '#c': 'consumer', '#at': 'at' },
        ConsistentRead: true,
      }),
    );
    const waiting = (out.Items ?? []).sort((a, b) => Number(a.at) - Number(b.at));
    const taken: Registration[] = [];
    // A registration another admission took meanwhile covers nothing of this one's: the next is tried.
    for (let left = entries; left > 0 && waiting.length; ) {
      const picked: Record<string, unknown>[] = [];
      for (let covered = 0; covered < left && waiting.length; ) {
        const item = waiting.shift() as Record<string, unknown>;
        picked.push(item);
        covered += wantsOf(item);
      }
      const won = await Promise.all(picked.map((item) => this.delete(queue, String(item.sk))));
      picked.forEach((item, i) => {
        if (!won[i]) return;
        taken.push({
          connection: String(item.sk),
          wants: wantsOf(item),
          ...(typeof item.lease_s === 'number'
            ? { lease: { seconds: item.lease_s, consumerId: String(item.consumer) } }
            : {}),
        });
        left -= wantsOf(item);
      });
    }
    return taken;
  }

  private async delete(queue: string, connection: string): Promise<boolean> {
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.table,
          Key: { pk: wakePk(queue), sk: connection },
          ConditionExpression: 'attribute_exists(pk)',
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }
}

function wantsOf(item: Record<string, unknown>): number {
  return Math.max(1, Number(item.wants) || 1);
}
