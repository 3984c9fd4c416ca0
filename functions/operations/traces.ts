import type { MessageTrace, MessageTraceDeps } from './trace.js';

/**
 * "Where is message X?" (operations/trace.ts). Its reading of the log and the lease layer is a
 * file of its own beside the api's Lambda bundle, loaded on the first ask (infra/leaseq-function.ts):
 * only an operator tracing a message needs it, and the bundle keeps its room under the ceiling.
 * Its 404 is its own copy of MessageNotFoundError, which the api knows by brand (core/errors.ts).
 */
export class Traces {
  private loaded: Promise<MessageTrace> | undefined;

  constructor(private readonly deps: MessageTraceDeps) {}

  async trace(queue: string, messageId: string) {
    this.loaded ??= import('./trace.js').then((module) => new module.MessageTrace(this.deps));
    return (await this.loaded).trace(queue, messageId);
  }
}
