import { LeaseqClient } from 'leaseq/client';

/**
 * The client the examples share, from LEASEQ_URL and LEASEQ_KEY; with LEASEQ_CHANNEL_URL its
 * Worker waits on the wake channel instead of in long polls.
 */
export function clientFromEnv(): LeaseqClient {
  const apiKey = process.env.LEASEQ_KEY;
  if (!apiKey) {
    console.error('set LEASEQ_KEY, for example LEASEQ_KEY=$(cat .leaseq/admin-key)');
    process.exit(2);
  }
  const channelUrl = process.env.LEASEQ_CHANNEL_URL;
  return new LeaseqClient({
    baseUrl: process.env.LEASEQ_URL ?? 'http://127.0.0.1:4000',
    apiKey,
    ...(channelUrl ? { channelUrl } : {}),
  });
}

export const queue = process.env.LEASEQ_QUEUE ?? 'jobs';
