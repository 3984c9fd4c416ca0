import { operationName, type SdkClient, stackOf } from './sdk-client.js';

/**
 * Counts AWS requests per service and operation, and DynamoDB capacity units, at the SDK
 * client: what a message costs is measured where it is paid.
 */
export interface MeterSnapshot {
  requests: Record<string, number>;
  totalRequests: number;
  /** Base table and index reads alike (an index read is billed as a table read). */
  readUnits: number;
  /** Base-table writes. */
  writeUnits: number;
  /**
   * Index writes, where the service reports them (DynamoDB and DynamoDB Local do; dynalite
   * reports the base table only, so there it stays 0 and the bench estimates them).
   */
  indexWriteUnits: number;
}

interface Units {
  CapacityUnits?: number;
  ReadCapacityUnits?: number;
  WriteCapacityUnits?: number;
}

interface CapacityLike extends Units {
  Table?: Units;
  GlobalSecondaryIndexes?: Record<string, Units>;
}

export class RequestMeter {
  private requests = new Map<string, number>();
  private readUnits = 0;
  private writeUnits = 0;
  private indexWriteUnits = 0;

  attach(client: SdkClient): void {
    stackOf(client).add(
      (next, context) => async (args) => {
        const name = operationName(context);
        this.requests.set(name, (this.requests.get(name) ?? 0) + 1);
        // Capacity reports cost nothing extra; without them units could only be guessed.
        if (name.startsWith('DynamoDB.') && args.input && !args.input.ReturnConsumedCapacity) {
          args.input.ReturnConsumedCapacity = 'INDEXES';
        }
        const result = await next(args);
        this.countCapacity(name, result.output as Record<string, unknown>);
        return result;
      },
      { step: 'initialize', name: 'leaseqRequestMeter', override: true },
    );
  }

  private countCapacity(operation: string, output: Record<string, unknown> | undefined): void {
    const consumed = output?.ConsumedCapacity as CapacityLike | CapacityLike[] | undefined;
    if (!consumed) return;
    const isRead = /\.(Get|BatchGet|Query|Scan)/.test(operation);
    const unitsOf = (u: Units | undefined) =>
      u?.CapacityUnits ?? (isRead ? u?.ReadCapacityUnits : u?.WriteCapacityUnits) ?? 0;
    for (const c of Array.isArray(consumed) ? consumed : [consumed]) {
      if (isRead) {
        this.readUnits += unitsOf(c);
        continue;
      }
      const index = Object.values(c.GlobalSecondaryIndexes ?? {}).reduce((a, u) => a + unitsOf(u), 0);
      this.writeUnits += c.Table ? unitsOf(c.Table) : unitsOf(c) - index;
      this.indexWriteUnits += index;
    }
  }

  snapshot(): MeterSnapshot {
    const requests = Object.fromEntries(this.requests);
    return {
      requests,
      totalRequests: Object.values(requests).reduce((a, b) => a + b, 0),
      readUnits: this.readUnits,
      writeUnits: this.writeUnits,
      indexWriteUnits: this.indexWriteUnits,
    };
  }

  reset(): void {
    this.requests.clear();
    this.readUnits = 0;
    this.writeUnits = 0;
    this.indexWriteUnits = 0;
  }
}
