import { LeaseqClient } from 'leaseq/client';

/** The client the examples share, from LEASEQ_URL and LEASEQ_KEY. */
export function clientFromEnv(): LeaseqClient {
  const apiKey = process.env.LEASEQ_KEY;
  if (!apiKey) {
    console.error('set LEASEQ_KEY, for example LEASEQ_KEY=$(cat .leaseq/admin-key)');
    process.exit(2);
  }
  return new LeaseqClient({ baseUrl: process.env.LEASEQ_URL ?? 'http://127.0.0.1:4000', apiKey });
}

export const queue = process.env.LEASEQ_QUEUE ?? 'jobs';
