import { Logger } from '@aws-lambda-powertools/logger';
import { lazySecretBox } from './access/secret-box-loader.js';
import type { SqsAuthenticatorDeps } from './access/sigv4-verifier.js';
import { SqsCredentialIssuer } from './access/sqs-credentials.js';
import { type LeaseTerms, processAdmissions } from './admission/admitted-signal.js';
import { FastAdmission } from './admission/fast-admission.js';
import { LagCatchUp } from './admission/lag-catch-up.js';
import { type AdmissionWaiters, RangeAdmission } from './admission/range-admission.js';
import type { AwsClients } from './aws/clients.js';
import type { ConnectionsClient } from './aws/connections.js';
import { ClaimStore } from './claims/claims.js';
import { KeyRing } from './core/auth.js';
import { ReceiptSigner } from './core/receipt.js';
import type { RuntimeConfig } from './core/runtime-config.js';
import { HeldDelivery } from './delivery/held-delivery.js';
import { KeyOrder } from './delivery/key-order.js';
import { OrderedLook } from './delivery/ordered-look.js';
import { QueueLineage } from './delivery/queue-lineage.js';
import { RangeFailures } from './delivery/range-failures.js';
import { RangeReceiver } from './delivery/range-receiver.js';
import { Requeue } from './delivery/requeue.js';
import { WakeChannel, type WakeChannelDeps } from './delivery/wake-channel.js';
import { ShardReader } from './log/shard-reader.js';
import { ShardDirectory, StreamLog } from './log/stream.js';
import { DeadLetters } from './operations/dead-letters.js';
import { DlqRetentions } from './operations/dlq-retention.js';
import { ParkedKeys } from './operations/parked-keys.js';
import { QueueAdmin } from './operations/queue-admin.js';
import { QueueStats } from './operations/queue-stats.js';
import { Redrives } from './operations/redrive.js';
import { Replays } from './operations/replay.js';
import { Traces } from './operations/traces.js';
import { AdmissionLags } from './store/admission-lags.js';
import { ApiKeyStore } from './store/api-keys.js';
import { AuditTrail } from './store/audit.js';
import { BufferedAdds } from './store/buffered-adds.js';
import { CommitMarks } from './store/commit-marks.js';
import { Counters } from './store/counters.js';
import { DedupStore } from './store/dedup.js';
import { jobStores } from './store/jobs.js';
import { KeyBlocks } from './store/key-blocks.js';
import { KeyHolds } from './store/key-holds.js';
import { KeyStates } from './store/key-states.js';
import { MessageStore } from './store/messages.js';
import { PollCancels } from './store/poll-cancels.js';
import { QueueControls } from './store/queue-controls.js';
import { RangeStore } from './store/ranges.js';
import { loadReceiptSecret } from './store/secret.js';
import { SegmentStore } from './store/segments.js';
import { ShardMarks } from './store/shard-marks.js';
import { SqsCredentialStore } from './store/sqs-credentials.js';
import { StorageMeter } from './store/storage.js';
import { StreamMarks } from './store/stream-marks.js';
import { SweepArm } from './store/sweep-arm.js';
import { TotalsSamples } from './store/totals-samples.js';
import { WakeRegistrations } from './store/wake-registrations.js';

/**
 * The adapters and services of one function instance, built once from its config and
 * clients. Every handler factory (api, dispatch, sweep) takes what it needs from here.
 */
export function buildServices(config: RuntimeConfig, clients: AwsClients) {
  const tenant = config.tenant.tenant;
  const table = config.tableName;
  const messages = new MessageStore(clients.doc, table);
  const buffered = new BufferedAdds(clients.doc, table);
  const counters = new Counters(clients.doc, table, buffered);
  const keys = new KeyStates(clients.doc, table);
  const holds = new KeyHolds(clients.doc, table);
  const blocks = new KeyBlocks(clients.doc, table);
  const claims = new ClaimStore(clients.s3, config.bucketName);
  const shards = new ShardDirectory(clients.kinesis);
  const log = new StreamLog(clients.kinesis);
  const audit = new AuditTrail(clients.doc, table);
  const segments = new SegmentStore(clients.doc, clients.s3, table, config.bucketName);
  const requeue = new Requeue({ tenant: config.tenant, messages, segments, log });
  const keyOrder = new KeyOrder({ keys, holds, requeue });
  const dedup = new DedupStore(clients.doc, table);
  const storage = new StorageMeter(clients.doc, table, buffered);
  const ranges = new RangeStore(clients.doc, table);
  const rangeFailures = new RangeFailures({ messages, ranges, segments, counters, keys, blocks, storage });
  const controls = new QueueControls(clients.doc, table);
  const samples = new TotalsSamples(clients.doc, table);
  const pollCancels = new PollCancels(clients.doc, table);
  const reader = new ShardReader(clients.kinesis);
  const shardMarks = new ShardMarks(clients.doc, table);
  const lineage = new QueueLineage({ directory: shards, marks: shardMarks });
  const windows = new OrderedLook({ ranges, blocks, keys, lineage });
  const jobs = jobStores(clients.doc, table);
  // Admission hands leases to, and wakes, the long polls waiting in this process, unless requests
  // are isolated as on AWS (RuntimeConfig.requestsIsolated).
  const inProcess = config.requestsIsolated !== true;
  const waiters: AdmissionWaiters = {
    waits: (queue) => processAdmissions.waits(`${table}/${queue}`),
    reserve: (queue, offers, now) => processAdmissions.reserve(`${table}/${queue}`, offers, now),
    notify: (queue, entries, ranges) => processAdmissions.notify(`${table}/${queue}`, entries, ranges),
  };
  const held = new HeldDelivery({
    tenant: config.tenant,
    keys,
    holds,
    ranges,
    segments,
    messages,
    failures: rangeFailures,
    shards,
    storage,
  });
  let signer: Promise<ReceiptSigner> | undefined;
  const loadSigner = () => {
    signer ??= loadReceiptSecret(clients.doc, table).then((secret) => new ReceiptSigner(secret));
    signer.catch(() => {
      signer = undefined;
    });
    return signer;
  };
  // Every function that admits hands entries to the wake channel's receivers as a receive would.
  const receiver = new RangeReceiver({
    ranges,
    messages,
    segments,
    claims,
    shards,
    failures: rangeFailures,
    held,
    blocks,
    keys,
    lineage,
    counters,
    storage,
    signer: loadSigner,
  });
  const wakes =
    clients.connections &&
    wakeChannel({
      registrations: new WakeRegistrations(clients.doc, table),
      connections: clients.connections,
      receiver,
      controls,
      counters,
    });
  const streamMarks = new StreamMarks(clients.doc, table, config.tenant.tenant);
  const admission = new RangeAdmission({
    ranges,
    streamMarks,
    segments,
    messages,
    dedup,
    windows,
    ...(inProcess ? { waiters } : {}),
    ...(wakes ? { wakes } : {}),
  });
  const lags = new AdmissionLags(clients.doc, table);
  return {
    tenant,
    lags,
    streamMarks,
    lagCatchUp: new LagCatchUp({ tenant: config.tenant, admission, lags, reader, ranges }),
    messages,
    counters,
    keys,
    holds,
    blocks,
    claims,
    shards,
    shardMarks,
    lineage,
    log,
    audit,
    keyOrder,
    requeue,
    ranges,
    segments,
    rangeFailures,
    controls,
    samples,
    pollCancels,
    held,
    receiver,
    signer: loadSigner,
    windows,
    admission,
    fastAdmission: new FastAdmission({ admission, reader }),
    reader,
    /** Admissions of this table's queues in this process. */
    ...(inProcess
      ? {
          admissions: {
            announcesAll: config.admissionsInProcess === true,
            seen: (queue: string) => processAdmissions.seen(`${table}/${queue}`),
            wait: (queue: string, since: number, terms: LeaseTerms, ms: number) =>
              processAdmissions.wait(`${table}/${queue}`, since, terms, ms),
          },
        }
      : {}),
    ...(wakes ? { wakes } : {}),
    dedup,
    storage,
    /** Armed after work that may leave state for the sweep (core/sweep-rest.ts). */
    sweepArm: new SweepArm(clients.doc, table, config.onSweepArmed),
    trace: new Traces({
      tenant: config.tenant,
      shards,
      reader,
      messages,
      dedup,
      ranges,
      segments,
      holds,
    }),
    deadLetters: new DeadLetters({ messages, claims, audit, storage }),
    parkedKeys: new ParkedKeys({ keys, keyOrder, audit }),
    stats: new QueueStats({
      tenant: config.tenant,
      messages,
      counters,
      shards,
      keyOrder,
      storage,
      ranges,
      controls,
      samples,
      commitMarks: new CommitMarks(clients.doc, table),
      lineage,
    }),
    queueAdmin: new QueueAdmin({ controls, audit }),
    redrives: new Redrives({
      messages,
      jobs: jobs.redrives,
      keys,
      keyOrder,
      requeue,
      audit,
      storage,
    }),
    replays: new Replays({
      tenant: config.tenant,
      jobs: jobs.replays,
      dedup,
      reader,
      shards,
      requeue,
      messages,
      audit,
      storage,
    }),
    retentions: new DlqRetentions({
      jobs: jobs.retentions,
      messages,
      audit,
      storage,
    }),
  };
}

export type Services = ReturnType<typeof buildServices>;

function wakeChannel({
  connections,
  ...deps
}: Omit<WakeChannelDeps, 'post' | 'onError'> & { connections: ConnectionsClient }): WakeChannel {
  const logger = new Logger({ serviceName: 'leaseq-wake-channel' });
  return new WakeChannel({
    ...deps,
    post: (connection, data) => connections.post(connection, data),
    onError: (err) => logger.warn('a wake was not sent', { error: String(err) }),
  });
}

/**
 * SQS credentials: the issuer (POST /keys), and what the verifier of signed requests reads, built
 * by the api function only. Apart from buildServices, so the other functions' bundles (and a
 * tenant's Lambda consumers') leave the KMS client out; the secret box exists only where the
 * config has secrets. The verifier itself is built by the SQS endpoint, a file loaded on the
 * first SQS request (sqs/endpoint.ts).
 */
export function buildSqsAccess(
  config: RuntimeConfig,
  clients: AwsClients,
): { apiKeys: ApiKeyStore; sqsCredentials: SqsCredentialIssuer; sqsAuth: SqsAuthenticatorDeps } {
  const box = lazySecretBox(config);
  const apiKeys = new ApiKeyStore(clients.doc, config.tableName);
  const credentials = new SqsCredentialStore(clients.doc, config.tableName);
  return {
    apiKeys,
    sqsCredentials: new SqsCredentialIssuer(credentials, box),
    sqsAuth: {
      ring: new KeyRing([...config.tenant.api_keys, ...(config.extraKeys ?? [])]),
      apiKeys,
      credentials,
      box,
    },
  };
}
