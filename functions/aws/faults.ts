import type { PutRecordsRequestEntry, PutRecordsResultEntry } from '@aws-sdk/client-kinesis';
import { type AnyResult, operationName, type SdkClient, stackOf } from './sdk-client.js';

/**
 * Fault injection around the real SDK clients (not a mock of the services): chosen calls,
 * or chosen records of a Kinesis PutRecords, fail as AWS would make them fail. The rest of
 * each request still reaches the emulator.
 */

export interface RecordFault {
  /** Decides, per PutRecords entry, whether that entry fails with a throughput error. */
  failRecord: (entry: PutRecordsRequestEntry) => boolean;
}

export interface CallFault {
  /** `Client.Command`, for example `DynamoDB.PutItem`, and the command's input. */
  match: (operation: string, input: unknown) => boolean;
  /** The error name the SDK would raise, for example `ThrottlingException`. */
  errorName: string;
  throttling?: boolean;
  /** The call reaches the service and only its answer is lost, as after a timeout. */
  answerLost?: boolean;
}

/**
 * - `throttle`: the service's throughput error, marked throttling, so the SDK backs off and retries it.
 * - `timeout`: a `TimeoutError` after which the caller cannot tell whether the request took effect:
 *   half of them reach the service and lose only the answer, as a real timeout can.
 * - `server`: a 500 `InternalServerError`.
 */
export type RateFaultKind = 'throttle' | 'timeout' | 'server';

/** Every matching call, and every PutRecords entry, fails at a rate (chaos runs). */
export interface RateFault {
  /** Share of matching calls that fail, 0-1. */
  rate: number;
  /** Each failure is one of these, picked at random. */
  kinds: readonly RateFaultKind[];
  /** `Client.Command`, for example `DynamoDB.PutItem`; default every call. */
  match?: (operation: string) => boolean;
  /** Share of the entries of each PutRecords that fail on their own (a partial failure); default `rate`. */
  recordRate?: number;
  /** Uniform in [0, 1): the caller seeds it, so a run's fault sequence can be replayed. */
  random: () => number;
}

/** The names AWS throttles each service's calls with; the SDK retries all of them as throttling. */
const THROTTLE_NAMES: Record<string, readonly string[]> = {
  DynamoDB: ['ProvisionedThroughputExceededException', 'ThrottlingException'],
  Kinesis: ['ProvisionedThroughputExceededException'],
  S3: ['SlowDown'],
};

export class FaultInjector {
  recordFault: RecordFault | undefined;
  callFault: CallFault | undefined;
  rateFault: RateFault | undefined;
  injected = 0;
  /** What the rate fault injected, by kind (`record` for PutRecords entries), for a run's report. */
  readonly injectedByKind: Record<RateFaultKind | 'record', number> = {
    throttle: 0,
    timeout: 0,
    server: 0,
    record: 0,
  };

  clear(): void {
    this.recordFault = undefined;
    this.callFault = undefined;
    this.rateFault = undefined;
  }

  attach(client: SdkClient): void {
    // Inside the retry loop (finalizeRequest, low priority), so the SDK's retry strategy sees each fault.
    stackOf(client).add(
      (next, context) => async (args) => {
        const operation = operationName(context);
        const fault = this.callFault;
        if (fault?.match(operation, args.input)) {
          this.injected++;
          if (fault.answerLost) await next(args);
          throw Object.assign(new Error(`injected ${fault.errorName}`), {
            name: fault.errorName,
            $fault: 'server',
            $metadata: { httpStatusCode: fault.throttling ? 400 : 500 },
            ...(fault.throttling ? { $retryable: { throttling: true } } : {}),
          });
        }
        const rate = this.rateFault;
        if (rate && (rate.match?.(operation) ?? true) && rate.random() < rate.rate) {
          return this.failAtRate(rate, operation, () => next(args));
        }
        return next(args);
      },
      { step: 'finalizeRequest', priority: 'low', name: 'leaseqCallFaults', override: true },
    );
    stackOf(client).add(
      (next, context) => async (args) => {
        const recordFault = this.recordFault;
        const rate = this.rateFault;
        const recordRate =
          rate && (rate.match?.(operationName(context)) ?? true) ? (rate.recordRate ?? rate.rate) : 0;
        if ((!recordFault && !recordRate) || context.commandName !== 'PutRecordsCommand') return next(args);
        const input = args.input as { Records: PutRecordsRequestEntry[] };
        const failing = input.Records.map((r) => {
          if (recordFault?.failRecord(r)) return true;
          if (!rate || !(rate.random() < recordRate)) return false;
          this.injectedByKind.record++;
          return true;
        });
        const passing = input.Records.filter((_, i) => !failing[i]);
        this.injected += failing.filter(Boolean).length;
        const inner = passing.length
          ? await next({ ...args, input: { ...input, Records: passing } })
          : { response: {}, output: { Records: [], FailedRecordCount: 0, $metadata: {} } };
        const realEntries = [...((inner.output as { Records?: PutRecordsResultEntry[] }).Records ?? [])];
        const records: PutRecordsResultEntry[] = failing.map((fails) =>
          fails
            ? { ErrorCode: 'ProvisionedThroughputExceededException', ErrorMessage: 'injected' }
            : (realEntries.shift() ?? {}),
        );
        const failed = records.filter((r) => r.ErrorCode).length;
        return {
          ...inner,
          output: { ...(inner.output as object), Records: records, FailedRecordCount: failed },
        };
      },
      { step: 'initialize', name: 'leaseqRecordFaults', override: true },
    );
  }

  private async failAtRate(
    fault: RateFault,
    operation: string,
    send: () => Promise<AnyResult>,
  ): Promise<AnyResult> {
    const kind = fault.kinds[Math.floor(fault.random() * fault.kinds.length)] ?? 'server';
    this.injected++;
    this.injectedByKind[kind]++;
    if (kind === 'throttle') {
      const names = THROTTLE_NAMES[operation.split('.')[0] ?? ''] ?? ['ThrottlingException'];
      const name = names[Math.floor(fault.random() * names.length)] ?? 'ThrottlingException';
      throw Object.assign(new Error(`injected ${name}`), {
        name,
        $fault: 'client',
        // S3 answers its SlowDown with a 503; the others with a 400.
        $metadata: { httpStatusCode: name === 'SlowDown' ? 503 : 400 },
        $retryable: { throttling: true },
      });
    }
    if (kind === 'timeout') {
      if (fault.random() < 0.5) await send();
      throw Object.assign(new Error('injected TimeoutError: no answer in time'), {
        name: 'TimeoutError',
        $metadata: {},
      });
    }
    throw Object.assign(new Error('injected InternalServerError'), {
      name: 'InternalServerError',
      $fault: 'server',
      $metadata: { httpStatusCode: 500 },
    });
  }
}
