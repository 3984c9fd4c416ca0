import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import type { AwsClients } from '../aws/clients.js';
import { lazySnsPublish } from '../aws/sns.js';
import { sleep } from '../core/async.js';
import type { FanOutSwitch } from '../core/fan-out-switch.js';
import type { RuntimeConfig } from '../core/runtime-config.js';
import { nextPassIn } from '../core/sweep-cadence.js';
import { armSettled } from '../core/sweep-rest.js';
import { ShardDirectory } from '../log/stream.js';
import { SERVICE } from '../observability/metrics.js';
import { buildServices, type Services } from '../services.js';
import { AlarmStates } from '../store/alarm-states.js';
import { ExpiryMarks } from '../store/expiry-marks.js';
import { FanOutQuiet } from '../store/fan-out-quiet.js';
import { UsageRollups } from '../store/usage-rollups.js';
import { alarmNotifier } from './alarm-notifier.js';
import { BlockedKeys } from './blocked-keys.js';
import { DriftCheck } from './drift-check.js';
import { ExpiryWatch } from './expiry-watch.js';
import { FanOutWatch } from './fan-out-watch.js';
import { Gauges } from './gauges.js';
import { HeldSweep } from './held-sweep.js';
import { LineageSweep } from './lineage-sweep.js';
import { emptyReport, Sweeper, type SweepReport } from './sweeper.js';

/** An invocation's passes, and whether it ended because the sweep may rest (core/sweep-rest.ts). */
export type SweepInvocation = SweepReport & { rested: boolean };

export type SweepHandler = ((event: unknown, context: Context) => Promise<SweepInvocation>) & {
  /** Resolves once the gauges being published (if any) are. */
  published(): Promise<void>;
};

export interface SweepOptions {
  /** Gauges are computed at most this often (COUNT queries over the index partitions). */
  gaugeIntervalMs?: number;
  /** Pause between passes inside one invocation. */
  passIntervalMs?: number;
  /** Stop starting passes when less than this is left of the invocation. */
  reserveMs?: number;
  /**
   * Whether an invocation ends with its gauges published (default, as on AWS), or leaves them to
   * finish beside the next invocations: the local runtime's invocations are one pass each.
   */
  awaitGauges?: boolean;
  /** What turns busy streams' fan-out on and off (core/fan-out-switch.ts); none, no stream is switched. */
  fanOut?: FanOutSwitch;
}

/** The sweep's gauges and alarms, with what they read and whom they tell. */
export function createGauges(
  config: RuntimeConfig,
  clients: AwsClients,
  services: Services,
  { expiryWatch, logger }: { expiryWatch: ExpiryWatch; logger: Logger },
): Gauges {
  return new Gauges({
    tenant: config.tenant,
    services,
    expiryWatch,
    drift: new DriftCheck({
      tenant: config.tenant,
      kinesis: clients.kinesis,
      doc: clients.doc,
      table: config.tableName,
      streamMarks: services.streamMarks,
      logger,
    }),
    // One line a namespace a gauge pass, for Logs Insights' graphs: `queue` names the namespace.
    record: (queue, gauges) => logger.info('gauges', { queue, ...gauges }),
    // Only the sweep keeps the usage's hourly rollups (GET /usage reads them in a file of its own).
    rollups: new UsageRollups(clients.doc, config.tableName),
    alarmStates: new AlarmStates(clients.doc, config.tableName),
    notify: alarmNotifier(
      logger,
      config.alarmTopicArn
        ? { arn: config.alarmTopicArn, publish: lazySnsPublish({ region: config.region, maxAttempts: 4 }) }
        : undefined,
    ),
  });
}

/**
 * Wires the sweep function. EventBridge fires it once a minute, and the table's stream when the
 * sweep is armed; it keeps making passes until the invocation is nearly over, so a 10 s backoff
 * tier is late by a pass interval at most, or until a pass lets it rest (core/sweep-rest.ts).
 */
export function createSweepHandler(
  config: RuntimeConfig,
  clients: AwsClients,
  options: SweepOptions = {},
  logger = new Logger({ serviceName: SERVICE.sweep }),
): SweepHandler {
  const services = buildServices(config, clients);
  // Only the sweep watches for expiries: built here, not in every function's services.
  const expiryWatch = new ExpiryWatch({ ...services, marks: new ExpiryMarks(clients.doc, config.tableName) });
  // Listed every pass (ListShards is not billed): a reshard's children wait, whole, until the
  // sweep marks their parents ended, and every reader's 10 s listing kept them waiting 7-9 s. Kept
  // for less than a pass interval: passes start a second apart, and a listing kept for a second
  // was often the last pass's, a pass late to see a shard closed.
  const shards = new ShardDirectory(clients.kinesis, 500);
  const sweeper = new Sweeper({
    ...services,
    shards,
    blockedKeys: new BlockedKeys(services),
    heldSweep: new HeldSweep(services),
    lineageSweep: new LineageSweep({ ...services, shards, marks: services.shardMarks }),
    tenant: config.tenant,
    logger,
  });
  const gaugeInterval = options.gaugeIntervalMs ?? 60_000;
  let gaugesAt = 0;
  const tenantGauges = createGauges(config, clients, services, { expiryWatch, logger });
  const fanOut =
    options.fanOut &&
    new FanOutWatch({
      tenant: config.tenant,
      switch: options.fanOut,
      quiet: new FanOutQuiet(clients.doc, config.tableName),
      logger,
    });
  const publishAllGauges = async () => {
    if (Date.now() - gaugesAt < gaugeInterval) return;
    gaugesAt = Date.now();
    const produced = await tenantGauges.publish();
    await fanOut?.observe(produced);
  };
  // The gauges read every queue's stats: published beside the passes, never before one, so a
  // retry that comes due meanwhile is not held up by them.
  let publishing: Promise<unknown> | undefined;
  /** The gauges' failure, or undefined: the invocation that awaits them fails with it. */
  const gauges = () => {
    publishing ??= publishAllGauges()
      .then(() => undefined)
      .catch((err: unknown) => {
        logger.error('gauges failed', { error: String(err) });
        return err;
      })
      .finally(() => {
        publishing = undefined;
      });
    return publishing;
  };
  const interval = options.passIntervalMs ?? 1000;
  const reserve = options.reserveMs ?? 5000;
  // The last arm read: while it is recent, no pass can rest, and none reads it again.
  let armedAt: number | undefined;
  /** After a pass that did nothing: the arm first, so a recent one spares the pending reads. */
  const restAfter = async (passStart: number, pass: SweepReport): Promise<boolean> => {
    if (pass.requeued || pass.expired || pass.released || pass.redriven || pass.replayed) return false;
    if (!armSettled(armedAt, passStart)) return false;
    armedAt = await services.sweepArm.armedAt();
    return armSettled(armedAt, passStart) && !(await sweeper.pending());
  };
  const handler = async (_event: unknown, context: Context): Promise<SweepInvocation> => {
    const total: SweepInvocation = { ...emptyReport(), rested: false };
    const published = gauges();
    do {
      const passStart = Date.now();
      const pass = await sweeper.sweepOnce();
      await services.counters.flush();
      total.requeued += pass.requeued;
      total.expired += pass.expired;
      total.released += pass.released;
      total.redriven += pass.redriven;
      total.replayed += pass.replayed;
      if (await restAfter(passStart, pass)) {
        total.rested = true;
        break;
      }
      const gap = nextPassIn(interval, Date.now() - passStart);
      if (context.getRemainingTimeInMillis() < reserve + gap) break;
      await sleep(gap);
    } while (context.getRemainingTimeInMillis() > reserve);
    // A failed invocation is what the sweep-failing alarm counts: the queues' alarms failed with the gauges.
    if (options.awaitGauges !== false) {
      const failed = await published;
      if (failed) throw failed;
    }
    return total;
  };
  return Object.assign(handler, {
    published: async () => {
      await publishing;
    },
  });
}
