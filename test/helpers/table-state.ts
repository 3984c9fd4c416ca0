import { ScanCommand } from '../../functions/aws/dynamodb.js';
import type { TestRuntime } from './runtime.js';

/**
 * The queues' counter items (stored bytes and running totals, stats slots). Every request the API
 * answers, refused or not, is counted there for usage (GET /usage), a second later, as API Gateway
 * bills it: a refused request must change nothing else.
 */
const COUNTER_ITEM = /^Q#[^#]+#(STORE|T#\d+) C$/;

/** Every item of the runtime's table by its key, less the counter items. */
export async function tableKeys(t: TestRuntime): Promise<string[]> {
  const items = await t.runtime.clients.doc.send(new ScanCommand({ TableName: t.runtime.config.tableName }));
  return (items.Items ?? []).map((i) => `${i.pk} ${i.sk}`).filter((key) => !COUNTER_ITEM.test(key));
}
