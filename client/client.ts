import { monotonicFactory } from 'ulid';
import type {
  AckResponse,
  AlarmsResponse,
  AuditResponse,
  Health,
  KeysResponse,
  ParkedKeysResponse,
  PauseResponse,
  ProduceResponse,
  QueuesResponse,
  RedriveMatching,
  ResumeResponse,
  UsageResponse,
} from '../functions/wire/responses.js';
import { isRetryable } from './errors.js';
import { backoffMs, type RetryPolicy, sleep, withRetries } from './retry.js';
import { Transport } from './transport.js';
import type {
  AckResult,
  ApiKeyInfo,
  AuditEntry,
  ConsumerScope,
  ConsumerStats,
  CreatedKey,
  CreateKeyRequest,
  DeadLetter,
  DeadLetterGroups,
  DlqListOptions,
  DlqPage,
  ExtendResult,
  MessageTrace,
  NackOptions,
  NackResult,
  ParkedKey,
  ProduceMessage,
  ProduceResult,
  QueueInfo,
  QueuePause,
  QueueStats,
  ReceivedMessage,
  ReceiveOptions,
  Redrive,
  RedriveFilter,
  RedriveRequest,
  Replay,
  ReplayRequest,
  Retention,
  RetentionRequest,
  SkipResult,
  UsageRequest,
} from './types.js';
import { WakeChannel } from './wake-channel.js';

/**
 * The client of leaseq's HTTP API (docs/contract.md, docs/http-api.md). Every call retries throttling (429), an
 * unavailable service (503) and network failures up to `maxRetries` times, honouring
 * Retry-After; any other non-2xx answer throws its typed error (errors.ts) at once.
 */

export interface LeaseqClientOptions {
  /** For example `http://127.0.0.1:4000` or the tenant's API Gateway URL. */
  baseUrl: string;
  apiKey: string;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Retries after the first try; default 5. */
  maxRetries?: number;
  /** First backoff step; default 100 ms, doubling with jitter. */
  retryBaseMs?: number;
  /** A request without an answer by then is a network failure (a receive adds its wait); default 30 s. */
  timeoutMs?: number;
  /**
   * The wake channel's WebSocket URL (the stack's `ChannelUrl` output; `npm start` prints it): a
   * Worker then waits for its queues' admissions there instead of in long polls
   * (docs/wake-channel.md).
   */
  channelUrl?: string;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/** The owner's tools (`admin:q`) also reach one Lambda consumer's state with `consumer`. */
export type OperationOptions = CallOptions & ConsumerScope;

export class LeaseqClient {
  private readonly transport: Transport;
  private readonly policy: RetryPolicy;
  /** Ids the client gave to messages without one, so producing the same object again dedups. */
  private readonly assignedIds = new WeakMap<object, string>();
  private readonly nextId = monotonicFactory();

  constructor(private readonly options: LeaseqClientOptions) {
    this.transport = new Transport({
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
      // Called through a wrapper: a browser's fetch throws "Illegal invocation" called as a method.
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      timeoutMs: options.timeoutMs ?? 30_000,
    });
    this.policy = { maxRetries: options.maxRetries ?? 5, baseMs: options.retryBaseMs ?? 100 };
  }

  /** A wake channel of its own for the caller to close, if the client has a `channelUrl`. */
  openWakeChannel(): WakeChannel | undefined {
    const { channelUrl, apiKey } = this.options;
    return channelUrl === undefined ? undefined : new WakeChannel({ url: channelUrl, apiKey });
  }

  /**
   * Appends messages (1-500) and answers one result per message, in input order. Every
   * message without an id gets a ULID before the first try, so a retry that repeats an
   * already accepted message answers `duplicate` instead of appending a second copy; the
   * same object passed again keeps its id. Messages answered `failed` are sent again up to
   * `maxRetries` times; what still fails is returned as `failed`. A request that fails as a
   * whole throws once its retries are used up: producing the same objects again is safe.
   */
  async produce(
    queue: string,
    messages: readonly ProduceMessage[],
    options: CallOptions = {},
  ): Promise<ProduceResult[]> {
    const withIds = messages.map((m) => ({ ...m, message_id: this.idOf(m) }));
    const results: ProduceResult[] = [];
    let pending = withIds.map((_, i) => i);
    for (let retry = 0; ; retry++) {
      let failure: unknown;
      try {
        const answer = await this.transport.send<ProduceResponse>('POST', this.path(queue, 'messages'), {
          body: { messages: pending.map((i) => withIds[i]) },
          signal: options.signal,
        });
        pending.forEach((index, j) => {
          results[index] = answer.results[j] as ProduceResult;
        });
        pending = pending.filter((i) => {
          const r = results[i] as ProduceResult;
          return r.status === 'failed' && r.error?.retryable !== false;
        });
        if (!pending.length || retry >= this.policy.maxRetries) return results;
      } catch (err) {
        if (retry >= this.policy.maxRetries || !isRetryable(err) || options.signal?.aborted) throw err;
        failure = err;
      }
      await sleep(backoffMs(this.policy, retry, failure), options.signal);
      if (options.signal?.aborted) throw options.signal.reason;
    }
  }

  /** Leases up to `max_messages`; with `wait_seconds` it long-polls until one is available. */
  receive<T = unknown>(
    queue: string,
    body: ReceiveOptions = {},
    options: CallOptions = {},
  ): Promise<ReceivedMessage<T>[]> {
    return this.call(options, async () => {
      const answer = await this.transport.send<{ messages: ReceivedMessage<T>[] }>(
        'POST',
        this.path(queue, 'receive'),
        { body, signal: options.signal, extraTimeoutMs: (body.wait_seconds ?? 0) * 1000 },
      );
      return answer.messages;
    });
  }

  /**
   * Calls off a long poll by its `poll_id` (a worker stopping): what that poll leases from then
   * on is given back at once, without using an attempt, instead of staying leased to nobody.
   */
  async cancelReceive(queue: string, pollId: string, options: CallOptions = {}): Promise<void> {
    await this.post(queue, 'receive/cancel', { poll_id: pollId }, options);
  }

  /** Acks 1-100 receipts; acking the current receipt again answers `acked` again. */
  async ack(queue: string, receipts: readonly string[], options: CallOptions = {}): Promise<AckResult[]> {
    const answer = await this.post<AckResponse>(queue, 'ack', { receipts }, options);
    return answer.results;
  }

  /**
   * Fails this delivery: retried after the queue's backoff tier (or `retry_after_seconds`), or
   * dead-lettered with `retryable: false`. A nack retried after a lost answer may throw
   * StaleReceiptError although the first one landed.
   */
  nack(
    queue: string,
    receipt: string,
    body: NackOptions = {},
    options: CallOptions = {},
  ): Promise<NackResult> {
    return this.post(queue, 'nack', { receipt, ...body }, options);
  }

  /** Heartbeat: the lease now ends `leaseSeconds` from now, clamped to the max total lease. */
  extend(
    queue: string,
    receipt: string,
    leaseSeconds: number,
    options: CallOptions = {},
  ): Promise<ExtendResult> {
    return this.post(queue, 'extend', { receipt, lease_seconds: leaseSeconds }, options);
  }

  /** The queues this key has a scope on, with what it may do on each. */
  async queues(options: CallOptions = {}): Promise<QueueInfo[]> {
    return (await this.get<QueuesResponse>('/queues', options)).queues;
  }

  /** The queue's figures; with `consumer`, that Lambda consumer's, which have a shape of their own. */
  stats(queue: string, options?: CallOptions & { consumer?: undefined }): Promise<QueueStats>;
  stats(queue: string, options: CallOptions & { consumer: string }): Promise<ConsumerStats>;
  stats(queue: string, options?: OperationOptions): Promise<QueueStats | ConsumerStats>;
  stats(queue: string, options: OperationOptions = {}): Promise<QueueStats | ConsumerStats> {
    return this.get(this.opPath(queue, 'stats', options), options);
  }

  /** The dead letters grouped by their last error, largest group first: one bug or many. */
  dlqErrors(queue: string, options: OperationOptions = {}): Promise<DeadLetterGroups> {
    return this.get(this.opPath(queue, 'dlq-errors', options), options);
  }

  /** One page of dead letters, oldest first; pass `next_cursor` back for the next page. */
  dlq<T = unknown>(
    queue: string,
    list: DlqListOptions = {},
    options: OperationOptions = {},
  ): Promise<DlqPage<T>> {
    const query = new URLSearchParams();
    if (list.limit !== undefined) query.set('limit', String(list.limit));
    if (list.cursor !== undefined) query.set('cursor', list.cursor);
    return this.get(this.opPath(queue, 'dlq', options, query), options);
  }

  dlqMessage<T = unknown>(
    queue: string,
    messageId: string,
    options: OperationOptions = {},
  ): Promise<DeadLetter<T>> {
    return this.get(this.opPath(queue, `dlq/${encodeURIComponent(messageId)}`, options), options);
  }

  /** Deletes one dead letter for good (audited); MessageNotFoundError when there is none. */
  async dlqPurge(queue: string, messageId: string, options: OperationOptions = {}): Promise<void> {
    await this.send('DELETE', this.opPath(queue, `dlq/${encodeURIComponent(messageId)}`, options), options);
  }

  /** Starts moving dead letters back into the queue at `rate_per_sec`, filtered (audited). */
  redrive(queue: string, body: RedriveRequest = {}, options: OperationOptions = {}): Promise<Redrive> {
    return this.send('POST', this.opPath(queue, 'redrive', options), options, body);
  }

  /** How many dead letters a redrive with `filter` would take now; starts nothing. */
  async redriveMatching(
    queue: string,
    filter: RedriveFilter = {},
    options: OperationOptions = {},
  ): Promise<number> {
    const answer: RedriveMatching = await this.send(
      'POST',
      this.opPath(queue, 'redrive/matching', options),
      options,
      { filter },
    );
    return answer.matching;
  }

  /** A redrive's progress: `moved`, `remaining`, `status`. */
  getRedrive(queue: string, redriveId: string, options: OperationOptions = {}): Promise<Redrive> {
    return this.send(
      'GET',
      this.opPath(queue, `redrives/${encodeURIComponent(redriveId)}`, options),
      options,
    );
  }

  /** Stops a running redrive (audited); what it moved stays moved. */
  cancelRedrive(queue: string, redriveId: string, options: OperationOptions = {}): Promise<Redrive> {
    return this.send(
      'DELETE',
      this.opPath(queue, `redrives/${encodeURIComponent(redriveId)}`, options),
      options,
    );
  }

  /** Delivers again what the queue accepted between `from` and `to` (audited); OutsideRetentionError before the log's start. */
  replay(queue: string, body: ReplayRequest, options: OperationOptions = {}): Promise<Replay> {
    return this.send('POST', this.opPath(queue, 'replay', options), options, body);
  }

  getReplay(queue: string, replayId: string, options: OperationOptions = {}): Promise<Replay> {
    return this.send('GET', this.opPath(queue, `replays/${encodeURIComponent(replayId)}`, options), options);
  }

  cancelReplay(queue: string, replayId: string, options: OperationOptions = {}): Promise<Replay> {
    return this.send(
      'DELETE',
      this.opPath(queue, `replays/${encodeURIComponent(replayId)}`, options),
      options,
    );
  }

  /**
   * Keeps the dead letters already in the DLQ for `dlq_retention_hours` from each one's death
   * (audited with `reason`): a job the sweep runs at `rate_per_sec`. It only extends.
   */
  extendDlqRetention(
    queue: string,
    body: RetentionRequest,
    options: OperationOptions = {},
  ): Promise<Retention> {
    return this.send('POST', this.opPath(queue, 'retention', options), options, body);
  }

  getRetention(queue: string, retentionId: string, options: OperationOptions = {}): Promise<Retention> {
    return this.send(
      'GET',
      this.opPath(queue, `retentions/${encodeURIComponent(retentionId)}`, options),
      options,
    );
  }

  cancelRetention(queue: string, retentionId: string, options: OperationOptions = {}): Promise<Retention> {
    return this.send(
      'DELETE',
      this.opPath(queue, `retentions/${encodeURIComponent(retentionId)}`, options),
      options,
    );
  }

  /** Ordered queues: the keys held behind a dead message. */
  async parkedKeys(queue: string, options: OperationOptions = {}): Promise<ParkedKey[]> {
    return (await this.get<ParkedKeysResponse>(this.opPath(queue, 'keys/parked', options), options)).keys;
  }

  /** Releases a parked key without its dead message (audited with `reason`). */
  skipKey(queue: string, key: string, reason: string, options: OperationOptions = {}): Promise<SkipResult> {
    return this.send('POST', this.opPath(queue, `keys/${encodeURIComponent(key)}/skip`, options), options, {
      reason,
    });
  }

  /** Where a message is and everything that happened to it. */
  trace(queue: string, messageId: string, options: OperationOptions = {}): Promise<MessageTrace> {
    return this.get(this.opPath(queue, `messages/${encodeURIComponent(messageId)}`, options), options);
  }

  /** Who skipped, purged, redrove, replayed or paused what, newest first (`limit` 1-500, default 100). */
  async audit(
    queue: string,
    list: { limit?: number } = {},
    options: CallOptions = {},
  ): Promise<AuditEntry[]> {
    const query = list.limit !== undefined ? `?limit=${list.limit}` : '';
    return (await this.get<AuditResponse>(`${this.path(queue, 'audit')}${query}`, options)).entries;
  }

  /** Makes an API key (scope `admin:*`); the key is in this answer only. */
  createKey(body: CreateKeyRequest, options: CallOptions = {}): Promise<CreatedKey> {
    return this.send('POST', '/keys', options, body);
  }

  async listKeys(options: CallOptions = {}): Promise<ApiKeyInfo[]> {
    return (await this.get<KeysResponse>('/keys', options)).keys;
  }

  async revokeKey(name: string, options: CallOptions = {}): Promise<void> {
    await this.send('DELETE', `/keys/${encodeURIComponent(name)}`, options);
  }

  /**
   * Pauses the queue's deliveries (scope `admin:<queue>`; audited with `reason`): receive answers
   * nothing and its Lambda consumers hold their batches, within a second; produce goes on.
   */
  async pause(queue: string, reason: string, options: CallOptions = {}): Promise<QueuePause> {
    return (await this.post<PauseResponse>(queue, 'pause', { reason }, options)).paused;
  }

  /** Ends a pause (audited); throws NotFoundError when the queue is not paused. */
  async resume(queue: string, options: CallOptions & { reason?: string } = {}): Promise<QueuePause> {
    const body = options.reason !== undefined ? { reason: options.reason } : {};
    return (await this.post<ResumeResponse>(queue, 'resume', body, options)).resumed;
  }

  /**
   * What each queue used over a range, and the total: produced, consumed, stored GB-hours,
   * requests and their cost at list prices (`accuracy` says which figures are estimates). Scope
   * `admin:*`, or `admin:<queue>` with `queue`. A reversed or over-93-day range is InvalidRangeError.
   */
  usage(request: UsageRequest, options: CallOptions = {}): Promise<UsageResponse> {
    const time = (t: string | Date) => (t instanceof Date ? t.toISOString() : t);
    const query = new URLSearchParams({ from: time(request.from), to: time(request.to) });
    if (request.queue !== undefined) query.set('queue', request.queue);
    return this.get(`/usage?${query}`, options);
  }

  /** The queues' alarms above their threshold now, as the sweep last evaluated them. Scope `admin:*`. */
  alarms(options: CallOptions = {}): Promise<AlarmsResponse> {
    return this.get('/alarms', options);
  }

  health(options: CallOptions = {}): Promise<Health> {
    return this.get('/health', options);
  }

  private idOf(message: ProduceMessage): string {
    if (message.message_id !== undefined) return message.message_id;
    let id = this.assignedIds.get(message);
    if (!id) {
      id = this.nextId();
      this.assignedIds.set(message, id);
    }
    return id;
  }

  private path(queue: string, rest: string): string {
    return `/queues/${encodeURIComponent(queue)}/${rest}`;
  }

  /** A queue path with the `?consumer=` of the owner's tools and any further query. */
  private opPath(queue: string, rest: string, scope: ConsumerScope, query = new URLSearchParams()): string {
    if (scope.consumer !== undefined) query.set('consumer', scope.consumer);
    const suffix = query.size ? `?${query}` : '';
    return `${this.path(queue, rest)}${suffix}`;
  }

  private send<T>(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    options: CallOptions,
    body?: unknown,
  ): Promise<T> {
    return this.call(options, () =>
      this.transport.send<T>(method, path, {
        ...(body !== undefined ? { body } : {}),
        signal: options.signal,
      }),
    );
  }

  private post<T>(queue: string, action: string, body: unknown, options: CallOptions): Promise<T> {
    return this.call(options, () =>
      this.transport.send<T>('POST', this.path(queue, action), { body, signal: options.signal }),
    );
  }

  private get<T>(path: string, options: CallOptions): Promise<T> {
    return this.call(options, () => this.transport.send<T>('GET', path, { signal: options.signal }));
  }

  private call<T>(options: CallOptions, attempt: () => Promise<T>): Promise<T> {
    return withRetries(this.policy, options.signal, attempt);
  }
}
