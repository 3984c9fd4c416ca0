import { MessageNotFoundError } from '../core/errors.js';
import type { MessageTrace, MessageTraceDeps } from './trace.js';

/**
 * "Where is message X?" (operations/trace.ts). Its reading of the log and the lease layer is a
 * file of its own beside the api's Lambda bundle, loaded on the first ask (infra/leaseq-function.ts):
 * only an operator tracing a message needs it, and the bundle keeps its room under the ceiling.
 */
export class Traces {
  private loaded: Promise<MessageTrace> | undefined;

  constructor(private readonly deps: MessageTraceDeps) {}

  async trace(queue: string, messageId: string) {
    this.loaded ??= import('./trace.js').then((module) => new module.MessageTrace(this.deps));
    try {
      return await (await this.loaded).trace(queue, messageId);
    } catch (err) {
      // That file has its own copy of the error classes: its 404 becomes this bundle's, which the
      // api answers by its class.
      if ((err as { code?: unknown }).code === 'MESSAGE_NOT_FOUND') throw new MessageNotFoundError(messageId);
      throw err;
    }
  }
}
