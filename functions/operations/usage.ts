import type { UsageReportDeps } from './usage-report.js';

/**
 * The usage of queues over a range (GET /usage). Its reading and arithmetic are a file of their
 * own beside the api's Lambda bundle, loaded on the first ask (infra/leaseq-function.ts): only a
 * chargeback run needs them, so no other request pays for parsing them.
 */
export class Usage {
  private loaded: Promise<typeof import('./usage-report.js')> | undefined;

  constructor(private readonly deps: UsageReportDeps) {}

  async report(queues: readonly string[], range: { from: number; to: number }) {
    this.loaded ??= import('./usage-report.js');
    return (await this.loaded).usageReport(this.deps, queues, range);
  }
}
