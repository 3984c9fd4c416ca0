/** `leaseq/consumer`: the middleware for a Lambda function subscribed to a queue's stream. */

export { NonRetryableError, RetryAfterError } from './errors.js';
export { type ConsumerLambda, type LeaseqConsumerOptions, leaseqConsumer } from './middleware.js';
export type { LeaseqMessage, MessageHandler } from './records.js';
