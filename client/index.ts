/** leaseq/client: the SDK for services that use leaseq over its HTTPS API. */

export { type CallOptions, LeaseqClient, type LeaseqClientOptions, type OperationOptions } from './client.js';
export * from './errors.js';
export { AdaptiveLimit, isOverload, type LimitOptions, type LimitStats } from './limiter.js';
export type { QueueSlots, SlotOptions } from './slots.js';
export type * from './types.js';
export {
  type BatchContext,
  type BatchHandler,
  type BatchItemFailure,
  type Handler,
  type HandlerContext,
  type QueueOptions,
  Worker,
  type WorkerHooks,
  type WorkerOptions,
  type WorkerPhase,
  type WorkerStats,
} from './worker.js';
