import {
  LeaseqApiError,
  LeaseqNetworkError,
  type ProduceResult,
  type ReceivedMessage,
} from '../client/index.js';

/**
 * Everything a chaos run saw, as the clients saw it: each id sent and the answers it got, each
 * delivery, each ack or nack with the moment it was sent and its answer, each API error, and
 * the run's own marks (kills, restarts, fault storms). The checks read only this and the final
 * state of the queues. Times are `Date.now()`, the clock the runtime stamps leases with.
 */

/** What the producers put in every payload, so a delivery can be checked against what was sent. */
export interface ChaosPayload {
  id: string;
  key?: string;
  /** The message's place in its key's produce order (ordered queue). */
  seq?: number;
}

export interface Produced {
  queue: string;
  id: string;
  key?: string;
  seq?: number;
  sentAt: number;
  accepted: number;
  duplicate: number;
  failed: number;
}

export type SettleOutcome = 'acked' | 'nacked' | 'stale' | 'invalid' | 'unknown';

export interface Settle {
  kind: 'ack' | 'nack';
  /** Stamped before the request leaves: the server can act on it only afterwards. */
  sentAt: number;
  answeredAt?: number;
  /** `unknown`: no answer, or an error answer; the request may or may not have taken effect. */
  outcome?: SettleOutcome;
}

export interface Delivery {
  /** Arrival order in this history. */
  n: number;
  queue: string;
  id: string;
  key: string | null;
  seq: number | undefined;
  attempt: number;
  receipt: string;
  consumer: string;
  /** Stamped when the answer arrived: the server leased it earlier. */
  receivedAt: number;
  leaseExpiresAt: number;
  payloadIntact: boolean;
  /** Set on a replay's copy, its retries and its redrives (decision 0016: a new life of its id). */
  replayId: string | undefined;
  /** Which life of its id this delivery is of (`lifeOf`). */
  life: string;
  settle?: Settle;
}

/**
 * A message id's life: the producer's (the id itself), or a replay's copy, which is delivered,
 * retried, acked and dead-lettered again on its own (docs/decisions/0016).
 */
export function lifeOf(id: string, replayId?: string | undefined): string {
  return replayId === undefined ? id : `${id}#replay#${replayId}`;
}

/** A replay the run started: the messages it was asked for (by id, all acked before its start). */
export interface ReplayRun {
  queue: string;
  replayId: string;
  requestedAt: number;
  ids: string[];
}

/** A redrive the run started, with the queue's DLQ (life → dead at) just before and after its start. */
export interface RedriveRun {
  queue: string;
  redriveId: string;
  requestedAt: number;
  /** What the server counted to move when the job started. */
  remainingAtStart: number;
  deadBefore: Map<string, number>;
  deadAfter: Map<string, number>;
}

/** The API's error contract (docs/contract.md, "Authentication and errors" and "Rules for state"): what a run's answers are checked against. */
export type ApiRule = 'no 500' | 'Retry-After on 503' | 'failed is retryable';

export interface ApiViolation {
  at: number;
  operation: string;
  rule: ApiRule;
  what: string;
}

export type Operation = 'produce' | 'receive' | 'ack' | 'nack' | 'admin';

export class History {
  readonly startedAt = Date.now();
  readonly produced = new Map<string, Produced>();
  readonly deliveries: Delivery[] = [];
  /** `<operation> <status>` (or `network`) → count of answers. */
  readonly answers = new Map<string, number>();
  readonly violations: ApiViolation[] = [];
  readonly marks: { at: number; what: string }[] = [];
  /** The operator's jobs started during the run (jobs.ts). */
  readonly jobs: { replays: ReplayRun[]; redrives: RedriveRun[] } = { replays: [], redrives: [] };

  mark(what: string): void {
    this.marks.push({ at: Date.now(), what });
  }

  sent(queue: string, payload: ChaosPayload): void {
    if (this.produced.has(payload.id)) return;
    this.produced.set(payload.id, {
      queue,
      id: payload.id,
      ...(payload.key !== undefined ? { key: payload.key } : {}),
      ...(payload.seq !== undefined ? { seq: payload.seq } : {}),
      sentAt: Date.now(),
      accepted: 0,
      duplicate: 0,
      failed: 0,
    });
  }

  /** Records one produce answer; true when the message is known to be in the log. */
  produceResult(result: ProduceResult): boolean {
    const p = this.produced.get(result.message_id);
    if (!p) throw new Error(`produce answered for ${result.message_id}, which was never sent`);
    p[result.status]++;
    if (result.status === 'failed' && result.error?.retryable !== true) {
      this.violations.push({
        at: Date.now(),
        operation: 'produce',
        rule: 'failed is retryable',
        what: `${result.message_id} failed without retryable:true: ${JSON.stringify(result.error)}`,
      });
    }
    return result.status !== 'failed';
  }

  delivered(queue: string, consumer: string, m: ReceivedMessage, receivedAt: number): Delivery {
    const payload = m.payload as Partial<ChaosPayload> | null;
    const sent = this.produced.get(m.message_id);
    const delivery: Delivery = {
      n: this.deliveries.length,
      queue,
      id: m.message_id,
      key: m.key,
      seq: payload?.seq,
      attempt: m.attempt,
      receipt: m.receipt,
      consumer,
      receivedAt,
      leaseExpiresAt: Date.parse(m.lease_expires_at),
      payloadIntact:
        sent !== undefined &&
        payload?.id === m.message_id &&
        payload.key === sent.key &&
        payload.seq === sent.seq &&
        (m.key ?? undefined) === sent.key,
      replayId: m.replay_id,
      life: lifeOf(m.message_id, m.replay_id),
    };
    this.deliveries.push(delivery);
    return delivery;
  }

  settling(delivery: Delivery, kind: Settle['kind']): Settle {
    delivery.settle = { kind, sentAt: Date.now() };
    return delivery.settle;
  }

  settled(settle: Settle, outcome: SettleOutcome): void {
    settle.answeredAt = Date.now();
    settle.outcome = outcome;
  }

  answered(operation: Operation, status: number): void {
    this.count(`${operation} ${status}`);
  }

  /**
   * Records an error answer. A 5xx other than 503 is a bug in leaseq (the gateway's 502 means
   * the handler threw), and a 503 must say when to come back.
   */
  failed(operation: Operation, err: unknown): void {
    if (err instanceof LeaseqNetworkError) {
      this.count(`${operation} network`);
      return;
    }
    if (!(err instanceof LeaseqApiError)) throw err;
    this.count(`${operation} ${err.status}`);
    if (err.status >= 500 && err.status !== 503) {
      this.violations.push({
        at: Date.now(),
        operation,
        rule: 'no 500',
        what: `${err.status} ${err.code}: ${err.message}`,
      });
    }
    if (err.status === 503 && err.retryAfterSeconds === undefined) {
      this.violations.push({ at: Date.now(), operation, rule: 'Retry-After on 503', what: err.message });
    }
  }

  /** For a failure report: times relative to the start of the run. */
  toJSON(): unknown {
    const t = (at: number | undefined) => (at === undefined ? undefined : at - this.startedAt);
    return {
      startedAt: new Date(this.startedAt).toISOString(),
      marks: this.marks.map((m) => ({ ...m, at: t(m.at) })),
      produced: [...this.produced.values()].map((p) => ({ ...p, sentAt: t(p.sentAt) })),
      deliveries: this.deliveries.map((d) => ({
        ...d,
        receivedAt: t(d.receivedAt),
        leaseExpiresAt: t(d.leaseExpiresAt),
        settle: d.settle && { ...d.settle, sentAt: t(d.settle.sentAt), answeredAt: t(d.settle.answeredAt) },
      })),
      answers: Object.fromEntries(this.answers),
      jobs: {
        replays: this.jobs.replays.map((r) => ({ ...r, requestedAt: t(r.requestedAt) })),
        redrives: this.jobs.redrives.map((r) => ({
          ...r,
          requestedAt: t(r.requestedAt),
          deadBefore: Object.fromEntries(r.deadBefore),
          deadAfter: Object.fromEntries(r.deadAfter),
        })),
      },
      violations: this.violations.map((v) => ({ ...v, at: t(v.at) })),
    };
  }

  private count(name: string): void {
    this.answers.set(name, (this.answers.get(name) ?? 0) + 1);
  }
}
