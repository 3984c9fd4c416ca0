import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import type { AwsClients } from '../aws/clients.js';
import { sleep } from '../core/async.js';
import type { RuntimeConfig } from '../core/runtime-config.js';
import { ShardDirectory, StreamLog } from '../log/stream.js';
import { Counters } from '../store/counters.js';
import { MessageStore } from '../store/messages.js';
import { Sweeper, type SweepReport } from './sweeper.js';

export type SweepHandler = (event: unknown, context: Context) => Promise<SweepReport>;

export interface SweepOptions {
  /** Pause between passes inside one invocation. */
  passIntervalMs?: number;
  /** Stop starting passes when less than this is left of the invocation. */
  reserveMs?: number;
}

/**
 * Wires the sweep function. EventBridge fires it once a minute; it keeps making passes until
 * the invocation is nearly over, so a 10 s backoff tier is late by a pass interval at most.
 */
export function createSweepHandler(
  config: RuntimeConfig,
  clients: AwsClients,
  options: SweepOptions = {},
  logger = new Logger({ serviceName: 'leaseq-sweep' }),
): SweepHandler {
  const sweeper = new Sweeper({
    tenant: config.tenant,
    messages: new MessageStore(clients.doc, config.tableName),
    counters: new Counters(clients.doc, config.tableName),
    log: new StreamLog(clients.kinesis),
    shards: new ShardDirectory(clients.kinesis),
    logger,
  });
  const interval = options.passIntervalMs ?? 1000;
  const reserve = options.reserveMs ?? 5000;
  return async (_event, context) => {
    const total: SweepReport = { requeued: 0, expired: 0 };
    do {
      const pass = await sweeper.sweepOnce();
      total.requeued += pass.requeued;
      total.expired += pass.expired;
      if (context.getRemainingTimeInMillis() < reserve + interval) break;
      await sleep(interval);
    } while (context.getRemainingTimeInMillis() > reserve);
    return total;
  };
}
