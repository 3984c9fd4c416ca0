import { SQSClient } from '@aws-sdk/client-sqs';
import { Consumer } from 'sqs-consumer';

/**
 * An `sqs-consumer` worker, unchanged but for its endpoint: leaseq speaks SQS's protocol.
 * With `npm start` running, take the credentials it prints (or .leaseq/sqs-credentials.json):
 *   AWS_ACCESS_KEY_ID=LQIA... AWS_SECRET_ACCESS_KEY=... npx tsx examples/sqs-consumer.ts
 * LEASEQ_URL (default http://127.0.0.1:4000), LEASEQ_TENANT (default local) and LEASEQ_QUEUE
 * (default jobs) say where.
 */

const endpoint = process.env.LEASEQ_URL ?? 'http://127.0.0.1:4000';
const queueUrl = `${endpoint}/${process.env.LEASEQ_TENANT ?? 'local'}/${process.env.LEASEQ_QUEUE ?? 'jobs'}`;

const consumer = Consumer.create({
  queueUrl,
  // Credentials come from the environment, as for any AWS SDK client.
  sqs: new SQSClient({ endpoint, region: process.env.AWS_REGION ?? 'us-east-1' }),
  batchSize: 4,
  waitTimeSeconds: 20,
  // A failure gives the message back at once; leaseq counts it as an attempt, so a message that
  // keeps failing reaches the queue's DLQ after max_attempts.
  terminateVisibilityTimeout: true,
  // Ctrl-C waits for the poll in progress and the messages it brought.
  pollingCompleteWaitTimeMs: 25_000,
  handleMessage: async (message) => {
    console.log(`${message.MessageId}: ${message.Body}`);
    return message;
  },
});

// A stale receipt (the handler outran its visibility timeout) is an error here, not silence.
consumer.on('error', (err) => console.error(`error: ${err.message}`));
consumer.on('processing_error', (err) => console.error(`handler failed: ${err.message}`));
consumer.on('stopped', () => console.log('stopped'));
consumer.start();
console.log(`consuming ${queueUrl}; Ctrl-C to stop`);
process.once('SIGINT', () => consumer.stop());
