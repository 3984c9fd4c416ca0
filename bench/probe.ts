import { type AnyArgs, operationName, type SdkClient, stackOf } from '../functions/aws/sdk-client.js';

/**
 * What the request meter (functions/aws/meter.ts) does not count but the bill does, read from
 * the same SDK clients by a second middleware that only the bench attaches:
 *
 * - Kinesis PUT payload units (25 KB chunks of each record) and bytes ingested and retrieved
 *   rounded up per record to 1 KB (the on-demand meters);
 * - conditional writes whose condition failed: DynamoDB bills each at least one write unit, but the
 *   error carries no capacity report, so the meter cannot see them (consumers racing for the same
 *   ready message, an ack re-read, a duplicate admission); a cancelled transaction counts one per
 *   item whose condition failed.
 *
 * Index write units are not counted here: the meter reads them from the capacity report where the
 * emulator gives one (DynamoDB Local; dynalite reports the base table only).
 */

export interface ProbeSnapshot {
  kinesisRecordsPut: number;
  kinesisPutPayloadUnits: number;
  /** Per-record sizes rounded up to 1 KB, as on-demand bills data in. */
  kinesisIngestedKb: number;
  kinesisRetrievedKb: number;
  /** Writes rejected by their condition: one write unit each on AWS (items under 1 KB). */
  failedConditionalWrites: number;
}

const KB = 1024;
const PAYLOAD_UNIT_BYTES = 25 * KB;

export class CostProbe {
  private totals = emptySnapshot();

  attach(client: SdkClient): void {
    stackOf(client).add(
      (next, context) => async (args) => {
        const name = operationName(context);
        try {
          const result = await next(args);
          this.observe(name, args, result.output);
          return result;
        } catch (err) {
          this.totals.failedConditionalWrites += failedConditions(err);
          throw err;
        }
      },
      { step: 'initialize', name: 'leaseqBenchProbe', override: true },
    );
  }

  private observe(name: string, args: AnyArgs, output: unknown): void {
    const input = args.input as Record<string, unknown>;
    switch (name) {
      case 'Kinesis.PutRecords':
        this.putRecords(input, output as { Records?: { ErrorCode?: string }[] });
        return;
      case 'Kinesis.GetRecords':
        for (const r of (output as { Records?: { Data?: Uint8Array; PartitionKey?: string }[] }).Records ??
          [])
          this.totals.kinesisRetrievedKb += Math.ceil(recordBytes(r) / KB);
        return;
    }
  }

  private putRecords(input: Record<string, unknown>, output: { Records?: { ErrorCode?: string }[] }): void {
    const records = (input.Records ?? []) as { Data?: Uint8Array; PartitionKey?: string }[];
    records.forEach((record, i) => {
      // A failed entry is retried by the producer and counted again when it lands.
      if (output.Records?.[i]?.ErrorCode) return;
      const bytes = recordBytes(record);
      this.totals.kinesisRecordsPut += 1;
      this.totals.kinesisPutPayloadUnits += Math.max(1, Math.ceil(bytes / PAYLOAD_UNIT_BYTES));
      this.totals.kinesisIngestedKb += Math.ceil(bytes / KB);
    });
  }

  snapshot(): ProbeSnapshot {
    return { ...this.totals };
  }

  reset(): void {
    this.totals = emptySnapshot();
  }
}

function emptySnapshot(): ProbeSnapshot {
  return {
    kinesisRecordsPut: 0,
    kinesisPutPayloadUnits: 0,
    kinesisIngestedKb: 0,
    kinesisRetrievedKb: 0,
    failedConditionalWrites: 0,
  };
}

/** Kinesis counts the data blob and the partition key toward a record's size. */
function recordBytes(record: { Data?: Uint8Array; PartitionKey?: string }): number {
  return (record.Data?.byteLength ?? 0) + Buffer.byteLength(record.PartitionKey ?? '');
}

/** Conditions that refused a write: one for ConditionalCheckFailed, one per failed item of a cancelled transaction. */
function failedConditions(err: unknown): number {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[] };
  if (e.name === 'ConditionalCheckFailedException') return 1;
  if (e.name !== 'TransactionCanceledException') return 0;
  return (e.CancellationReasons ?? []).filter((r) => r.Code === 'ConditionalCheckFailed').length;
}
