import { leaseqConsumer, NonRetryableError } from 'leaseq/consumer';

/**
 * A Lambda consumer of the queue `events`, declared in tenants/example-push.json:
 * `npm start -- --config tenants/example-push.json` runs it locally on the queue's stream;
 * `cdk deploy -c tenant=example-push` bundles it and subscribes it there.
 */

interface Event {
  type: string;
}

export const handler = leaseqConsumer<Event>(
  async (message) => {
    // A message that can never succeed goes to the DLQ at once instead of using up its attempts.
    if (typeof message.payload?.type !== 'string') throw new NonRetryableError('not an event');
    // Returning acks the message; throwing retries it after the queue's backoff.
    console.log(`${message.message_id} attempt ${message.attempt}: ${message.payload.type}`);
  },
  { queue: 'events' },
);
