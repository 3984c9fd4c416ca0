/** leaseq/testing: the redelivery conformance kit for a consumer's handler (docs/worker.md, "Test your consumer"). */

export { type ConsumerUnderTest, InjectedFailure } from './deliveries.js';
export {
  checkRedelivery,
  type Environment,
  type RedeliveryCheck,
  RedeliveryConformanceError,
  type RedeliveryOptions,
} from './redelivery.js';
