import type { MeterSnapshot } from '../functions/aws/meter.js';

/** Arithmetic over measurements: percentiles, costs per message, and aligned text tables. */

/**
 * The local shard pollers' reads and the shard listings. On AWS the event source mapping reads
 * the stream without a per-request charge, and locally the pollers read every idlePollMs and
 * list the shards every second even with nothing to do (ListShards is not billed, and every
 * instance lists a stream's shards every few seconds to follow a reshard), so request counts are
 * shown with and without them.
 */
const POLLING_OPERATIONS = ['Kinesis.GetRecords', 'Kinesis.ListShards'];

export interface PerMessage {
  requests: Record<string, number>;
  totalRequests: number;
  requestsWithoutPolling: number;
  writeUnits: number;
  readUnits: number;
}

export function perMessage(snapshot: MeterSnapshot, messages: number): PerMessage {
  const requests = Object.fromEntries(
    Object.entries(snapshot.requests)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([operation, n]) => [operation, n / messages]),
  );
  const polling = POLLING_OPERATIONS.reduce((n, op) => n + (snapshot.requests[op] ?? 0), 0);
  return {
    requests,
    totalRequests: snapshot.totalRequests / messages,
    requestsWithoutPolling: (snapshot.totalRequests - polling) / messages,
    writeUnits: snapshot.writeUnits / messages,
    readUnits: snapshot.readUnits / messages,
  };
}

/** DynamoDB units per message, every kind the bill counts; index units null where the emulator reports none. */
export interface CapacityPerMessage {
  /** Base table, as the emulator reports it. */
  writeUnits: number;
  /** Index writes as DynamoDB Local reports them; null on dynalite, which reports none. */
  indexWriteUnits: number | null;
  /** Writes refused by their condition: 1 WRU each on AWS, reported by no emulator (bench/probe.ts). */
  failedConditionalWrites: number;
  /** The three above; without index writes where they are not reported (then a lower bound). */
  writeUnitsAllIn: number;
  readUnits: number;
}

export function capacityPerMessage(
  units: { writeUnits: number; indexWriteUnits: number; readUnits: number },
  failedConditionalWrites: number,
  indexReported: boolean,
  messages: number,
): CapacityPerMessage {
  const index = indexReported ? units.indexWriteUnits : 0;
  return {
    writeUnits: units.writeUnits / messages,
    indexWriteUnits: indexReported ? index / messages : null,
    failedConditionalWrites: failedConditionalWrites / messages,
    writeUnitsAllIn: (units.writeUnits + index + failedConditionalWrites) / messages,
    readUnits: units.readUnits / messages,
  };
}

/** How a figure the emulator does not report is printed, in tables and beside goals. */
export const INDEX_NOT_REPORTED = 'not reported by dynalite (run with --dynamodb-local)';

/** A figure that leaves out what the emulator does not report is a lower bound: printed "≥ n". */
export function atLeast(n: number, exact: boolean): number | string {
  return exact ? n : `≥ ${formatNumber(n)}`;
}

/** Nearest-rank percentile: always a latency that was actually observed. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) throw new Error('percentile of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

/** Enough digits to tell 0.004 from 0.04 per message without printing noise on large figures. */
export function formatNumber(n: number): string {
  if (n === 0) return '0';
  const abs = Math.abs(n);
  if (abs < 0.1) return n.toFixed(3);
  if (abs < 10) return n.toFixed(2);
  if (abs < 100) return n.toFixed(1);
  return n.toFixed(0);
}

/** The first column labels the row and is left-aligned; figures are right-aligned so they line up by magnitude. */
export function formatTable(
  headers: readonly string[],
  rows: readonly (readonly (string | number)[])[],
): string {
  const cells = rows.map((row) => row.map((c) => (typeof c === 'number' ? formatNumber(c) : c)));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => (row[i] ?? '').length)));
  const line = (row: readonly string[]) =>
    row
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

/** One row per AWS operation seen in any column, one column per measured phase. */
export function operationRows(columns: readonly PerMessage[]): (string | number)[][] {
  const operations = [...new Set(columns.flatMap((c) => Object.keys(c.requests)))].sort();
  return operations.map((op) => [op, ...columns.map((c) => c.requests[op] ?? 0)]);
}
