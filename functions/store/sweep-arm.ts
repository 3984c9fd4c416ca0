import { type DocumentClient, GetCommand, UpdateCommand } from '../aws/dynamodb.js';
import { ARM_EVERY_MS } from '../core/sweep-rest.js';
import { SWEEP_ARM_KEY } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * The tenant's sweep arm (core/sweep-rest.ts): `armed_at`, moved forward by a conditional write
 * at most once per ARM_EVERY_MS for the whole tenant. On AWS the write wakes a resting sweep
 * through the table's stream; `onArmed` is the local runtime's way to do the same.
 */
export class SweepArm {
  /** The latest `armed_at` this instance wrote or read. */
  private known = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
    private readonly onArmed: () => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  /** Called after a write that left state for the sweep. */
  async arm(): Promise<void> {
    const now = this.now();
    if (now - this.known < ARM_EVERY_MS) return;
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: SWEEP_ARM_KEY,
          UpdateExpression: 'SET armed_at = :now',
          ConditionExpression: 'attribute_not_exists(armed_at) OR armed_at < :due',
          ExpressionAttributeValues: { ':now': now, ':due': now - ARM_EVERY_MS },
        }),
      );
      this.known = now;
      this.onArmed();
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      // Armed by another instance lately: that arm covers this one's state (core/sweep-rest.ts).
      this.known = (await this.armedAt()) ?? now;
    }
  }

  /** arm(), with a failure logged, not thrown: the next tick, a minute away at most, covers it. */
  async armOrWarn(logger: { warn(message: string, extra: Record<string, unknown>): void }): Promise<void> {
    await this.arm().catch((err) => logger.warn('arming the sweep failed', { error: String(err) }));
  }

  /** When the sweep was last armed (epoch ms), if ever. */
  async armedAt(): Promise<number | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: SWEEP_ARM_KEY, ConsistentRead: true }),
    );
    const at = out.Item?.armed_at;
    return typeof at === 'number' ? at : undefined;
  }
}
