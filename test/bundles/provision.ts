import { CreateKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { createClients } from '../../functions/aws/clients.js';
import { parseTenantConfig } from '../../functions/core/config.js';
import { createAdminClients } from '../../infra/local/admin-clients.js';
import { ensureResources } from '../../infra/local/resources.js';

/**
 * Run in a process with test/bundles/aws-at-moto.ts preloaded: creates in moto what the tenant
 * stack creates on AWS, through the local runtime's definitions (infra/local/resources.ts: the
 * table with the stack's keys and index, one stream per queue, the bucket), at AWS's regional
 * endpoints, and the KMS key that seals SQS credentials' secrets.
 */
export async function provision(
  rawTenant: unknown,
  names: { table: string; bucket: string; region: string },
): Promise<{ secretsKeyArn: string }> {
  const { region } = names;
  const clients = createClients({ region });
  const admin = createAdminClients(
    {
      dynamodb: `https://dynamodb.${region}.amazonaws.com`,
      kinesis: `https://kinesis.${region}.amazonaws.com`,
      s3: `https://s3.${region}.amazonaws.com`,
    },
    region,
  );
  const kms = new KMSClient({ region });
  try {
    await ensureResources(clients, admin, parseTenantConfig(rawTenant), { ...names, ttl: true });
    const key = await kms.send(new CreateKeyCommand({ Description: 'seals SQS credentials’ secrets' }));
    const arn = key.KeyMetadata?.Arn;
    if (!arn) throw new Error('KMS made a key without an ARN');
    return { secretsKeyArn: arn };
  } finally {
    admin.destroy();
    clients.destroy();
    kms.destroy();
  }
}
