import type { PutRecordsRequestEntry, PutRecordsResultEntry } from '@aws-sdk/client-kinesis';
import { operationName, type SdkClient, stackOf } from './sdk-client.js';

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
  /** `Client.Command`, for example `DynamoDB.PutItem`. */
  match: (operation: string) => boolean;
  /** The error name the SDK would raise, for example `ThrottlingException`. */
  errorName: string;
  throttling?: boolean;
}

export class FaultInjector {
  recordFault: RecordFault | undefined;
  callFault: CallFault | undefined;
  injected = 0;

  clear(): void {
    this.recordFault = undefined;
    this.callFault = undefined;
  }

  attach(client: SdkClient): void {
    // Inside the retry loop (finalizeRequest, low priority), so the SDK's retry strategy sees each fault.
    stackOf(client).add(
      (next, context) => async (args) => {
        const operation = operationName(context);
        const fault = this.callFault;
        if (fault?.match(operation)) {
          this.injected++;
          throw Object.assign(new Error(`injected ${fault.errorName}`), {
            name: fault.errorName,
            $fault: 'server',
            $metadata: { httpStatusCode: fault.throttling ? 400 : 500 },
            ...(fault.throttling ? { $retryable: { throttling: true } } : {}),
          });
        }
        return next(args);
      },
      { step: 'finalizeRequest', priority: 'low', name: 'leaseqCallFaults', override: true },
    );
    stackOf(client).add(
      (next, context) => async (args) => {
        const recordFault = this.recordFault;
        if (!recordFault || context.commandName !== 'PutRecordsCommand') return next(args);
        const input = args.input as { Records: PutRecordsRequestEntry[] };
        const failing = input.Records.map((r) => recordFault.failRecord(r));
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
}
