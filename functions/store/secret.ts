import { randomBytes } from 'node:crypto';
import { type DocumentClient, GetCommand, PutCommand } from '../aws/dynamodb.js';
import { RECEIPT_SECRET_KEY } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * The tenant's receipt-signing secret lives in its own table: made once by whichever
 * function needs it first (a conditional put decides the race), read once per instance.
 * Whoever can read the table can also change its state, so it adds no exposure.
 */
export async function loadReceiptSecret(doc: DocumentClient, table: string): Promise<Buffer> {
  const read = async () =>
    (await doc.send(new GetCommand({ TableName: table, Key: RECEIPT_SECRET_KEY, ConsistentRead: true })))
      .Item;
  const existing = await read();
  if (existing?.secret) return Buffer.from(String(existing.secret), 'base64');
  try {
    await doc.send(
      new PutCommand({
        TableName: table,
        Item: { ...RECEIPT_SECRET_KEY, secret: randomBytes(32).toString('base64') },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
  }
  const made = await read();
  return Buffer.from(String(made?.secret), 'base64');
}
