import { operationName, type SdkClient, stackOf } from './sdk-client.js';

/**
 * Counts AWS requests per service and operation, and DynamoDB capacity units, at the SDK
 * client: what a message costs is measured where it is paid.
 */
export interface MeterSnapshot {
  requests: Record<string, number>;
  totalRequests: number;
  readUnits: number;
  writeUnits: number;
}

interface CapacityLike {
  CapacityUnits?: number;
  ReadCapacityUnits?: number;
  WriteCapacityUnits?: number;
}

export class RequestMeter {
  private requests = new Map<string, number>();
  private readUnits = 0;
  private writeUnits = 0;

  attach(client: SdkClient): void {
    stackOf(client).add(
      (next, context) => async (args) => {
        const name = operationName(context);
        this.requests.set(name, (this.requests.get(name) ?? 0) + 1);
        // Capacity reports cost nothing extra; without them units could only be guessed.
        if (name.startsWith('DynamoDB.') && args.input && !args.input.ReturnConsumedCapacity) {
          args.input.ReturnConsumedCapacity = 'TOTAL';
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
    for (const c of Array.isArray(consumed) ? consumed : [consumed]) {
      const units = c.CapacityUnits ?? (isRead ? c.ReadCapacityUnits : c.WriteCapacityUnits) ?? 0;
      if (isRead) this.readUnits += units;
      else this.writeUnits += units;
    }
  }

  snapshot(): MeterSnapshot {
    const requests = Object.fromEntries(this.requests);
    return {
      requests,
      totalRequests: Object.values(requests).reduce((a, b) => a + b, 0),
      readUnits: this.readUnits,
      writeUnits: this.writeUnits,
    };
  }

  reset(): void {
    this.requests.clear();
    this.readUnits = 0;
    this.writeUnits = 0;
  }
}
