import { performance } from 'node:perf_hooks';
import { type AnyArgs, operationName, type SdkClient, stackOf } from '../functions/aws/sdk-client.js';

/**
 * What the request meter (functions/aws/meter.ts) does not count but the bill does, read from
 * the same SDK clients by a second middleware that only the bench attaches:
 *
 * - Kinesis PUT payload units (25 KB chunks of each record) and bytes ingested and retrieved
 *   rounded up per record to 1 KB (the on-demand meters);
 * - dispatch invocations and how long they ran, recognised by the window counter of a shard:
 *   every dispatch invocation reads it first (functions/dispatch/dispatcher.ts freeSlots) and, when
 *   it admitted anything, adds to it last (a positive ADD: only dispatch adds; acks, nacks and the
 *   sweep subtract);
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
  /** Dispatch invocations that admitted at least one message (one positive window ADD each). */
  dispatchInvocations: number;
  /** Invocations that read the window counter, found it full for their whole wait, and admitted nothing. */
  dispatchFullWindowInvocations: number;
  /** First window read to last window write, summed over all dispatch invocations. */
  dispatchSeconds: number;
  /** Writes rejected by their condition: one write unit each on AWS (items under 1 KB). */
  failedConditionalWrites: number;
}

const KB = 1024;
const PAYLOAD_UNIT_BYTES = 25 * KB;
/** dispatcher.ts re-reads a full window for up to 1 s; a read later than this after the first starts a new invocation. */
const WINDOW_WAIT_MS = 1000;
const INVOCATION_SLACK_MS = 150;

interface OpenInvocation {
  startedAt: number;
  lastReadEndedAt: number;
}

export class CostProbe {
  private totals = emptySnapshot();
  /** By window counter key (queue and shard): the dispatch invocation under way. */
  private open = new Map<string, OpenInvocation>();

  attach(client: SdkClient): void {
    stackOf(client).add(
      (next, context) => async (args) => {
        const name = operationName(context);
        const startedAt = performance.now();
        try {
          const result = await next(args);
          this.observe(name, args, result.output, startedAt, performance.now());
          return result;
        } catch (err) {
          this.totals.failedConditionalWrites += failedConditions(err);
          throw err;
        }
      },
      { step: 'initialize', name: 'leaseqBenchProbe', override: true },
    );
  }

  private observe(name: string, args: AnyArgs, output: unknown, startedAt: number, endedAt: number): void {
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
      case 'DynamoDB.GetItem':
        this.windowRead(input, startedAt, endedAt);
        return;
      case 'DynamoDB.UpdateItem':
        this.windowAdd(input, endedAt);
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

  private windowRead(input: Record<string, unknown>, startedAt: number, endedAt: number): void {
    const key = windowKey(input);
    if (!key) return;
    const open = this.open.get(key);
    if (open && startedAt - open.startedAt <= WINDOW_WAIT_MS + INVOCATION_SLACK_MS) {
      open.lastReadEndedAt = endedAt;
      return;
    }
    // The invocation before this read ended without admitting anything (its window stayed full).
    if (open) this.close(open, open.lastReadEndedAt, false);
    this.open.set(key, { startedAt, lastReadEndedAt: endedAt });
  }

  private windowAdd(input: Record<string, unknown>, endedAt: number): void {
    const key = windowKey(input);
    if (!key || !(addedAmount(input) > 0)) return;
    const open = this.open.get(key);
    if (!open) return;
    this.open.delete(key);
    this.close(open, endedAt, true);
  }

  private close(open: OpenInvocation, endedAt: number, admitted: boolean): void {
    this.totals.dispatchSeconds += (endedAt - open.startedAt) / 1000;
    if (admitted) this.totals.dispatchInvocations += 1;
    else this.totals.dispatchFullWindowInvocations += 1;
  }

  snapshot(): ProbeSnapshot {
    return { ...this.totals };
  }

  /** Invocations under way stay open: their reads happened before the reset and their end comes after. */
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
    dispatchInvocations: 0,
    dispatchFullWindowInvocations: 0,
    dispatchSeconds: 0,
    failedConditionalWrites: 0,
  };
}

/** Kinesis counts the data blob and the partition key toward a record's size. */
function recordBytes(record: { Data?: Uint8Array; PartitionKey?: string }): number {
  return (record.Data?.byteLength ?? 0) + Buffer.byteLength(record.PartitionKey ?? '');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

/** A value as the document client passes it, or in its marshalled form ({S}, {N}). */
function scalar(v: unknown): unknown {
  if (isRecord(v)) return v.S ?? (v.N !== undefined ? Number(v.N) : undefined);
  return v;
}

/** `Q#<queue>#W#<shard>`: the window counter key (functions/store/keys.ts windowCounterKey). */
function windowKey(input: Record<string, unknown>): string | undefined {
  const pk = isRecord(input.Key) ? scalar(input.Key.pk) : undefined;
  return typeof pk === 'string' && /^Q#[^#]+#W#/.test(pk) ? pk : undefined;
}

function addedAmount(input: Record<string, unknown>): number {
  const expression = String(input.UpdateExpression ?? '');
  const match = /\bADD\s+#\w+\s+(:\w+)/.exec(expression);
  const values = isRecord(input.ExpressionAttributeValues) ? input.ExpressionAttributeValues : {};
  return match?.[1] ? Number(scalar(values[match[1]])) : 0;
}

/** Conditions that refused a write: one for ConditionalCheckFailed, one per failed item of a cancelled transaction. */
function failedConditions(err: unknown): number {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[] };
  if (e.name === 'ConditionalCheckFailedException') return 1;
  if (e.name !== 'TransactionCanceledException') return 0;
  return (e.CancellationReasons ?? []).filter((r) => r.Code === 'ConditionalCheckFailed').length;
}
