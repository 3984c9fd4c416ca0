import { QueryCommand } from '../../functions/aws/dynamodb.js';
import { waitingPollsKey, wakePk } from '../../functions/store/keys.js';
import type { TestRuntime } from './runtime.js';

/** What a queue's receivers hold in the table: places to wait, and wake channel registrations. */

async function partition(t: TestRuntime, pk: string): Promise<Record<string, unknown>[]> {
  const out = await t.runtime.clients.doc.send(
    new QueryCommand({
      TableName: t.runtime.config.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ConsistentRead: true,
    }),
  );
  return out.Items ?? [];
}

/** Places to wait the queue's receives hold now, in every epoch (core/long-polls.ts). */
export async function placesHeld(t: TestRuntime, queue: string): Promise<number> {
  const items = await partition(t, waitingPollsKey(queue, 0).pk);
  return items.reduce((n, item) => n + Number(item.waiting ?? 0), 0);
}

/** The wake channel connections registered for the queue's next admission. */
export async function wakeRegistrations(t: TestRuntime, queue: string): Promise<string[]> {
  return (await partition(t, wakePk(queue))).map((item) => String(item.sk));
}
