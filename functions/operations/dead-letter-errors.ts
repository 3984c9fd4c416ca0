import type { QueueConfig } from '../core/config.js';
import type { GroupingDeps } from './dead-letter-grouping.js';

/**
 * The DLQ's view by error. Its reading and grouping are a file of their own beside the api's
 * Lambda bundle, loaded on the first ask (infra/leaseq-function.ts): only an operator looking at
 * a DLQ needs them, so no other request pays for parsing them.
 */
export class DeadLetterErrors {
  private loaded: Promise<typeof import('./dead-letter-grouping.js')> | undefined;

  constructor(private readonly deps: GroupingDeps) {}

  async groups(queue: string, config: QueueConfig) {
    this.loaded ??= import('./dead-letter-grouping.js');
    return (await this.loaded).deadLetterGroups(this.deps, queue, config);
  }
}
