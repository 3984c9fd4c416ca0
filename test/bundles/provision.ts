import { CreateKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { createClients, createRequestHandler } from '../../functions/aws/clients.js';
import {
  createKinesisClient,
  DescribeStreamConsumerCommand,
  DescribeStreamSummaryCommand,
  RegisterStreamConsumerCommand,
} from '../../functions/aws/kinesis.js';
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

/**
 * The tenant's alarm topic, encrypted with SNS's own key as the stack makes it, and an SQS queue
 * subscribed to it as the platform team's addresses are: filtered on the message body's
 * `AlarmName` by the platform's alarms (observability/alarm-rules.ts), so the messages that
 * arrive are the ones the stack's owner filters would route.
 */
export async function provisionAlarmTopic(
  region: string,
  platformAlarms: string[],
): Promise<{ topicArn: string; queueUrl: string }> {
  const sns = new SNSClient({ region });
  const sqs = new SQSClient({ region });
  try {
    const { TopicArn: topicArn } = await sns.send(
      new CreateTopicCommand({
        Name: 'leaseq-bundles-alarms',
        Attributes: { KmsMasterKeyId: 'alias/aws/sns' },
      }),
    );
    const { QueueUrl: queueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'platform-team' }));
    if (!topicArn || !queueUrl) throw new Error('moto made no topic or queue');
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
    );
    await sns.send(
      new SubscribeCommand({
        TopicArn: topicArn,
        Protocol: 'sqs',
        Endpoint: Attributes?.QueueArn,
        Attributes: {
          RawMessageDelivery: 'true',
          FilterPolicyScope: 'MessageBody',
          FilterPolicy: JSON.stringify({ AlarmName: platformAlarms.map((kind) => ({ suffix: `/${kind}` })) }),
        },
      }),
    );
    return { topicArn, queueUrl };
  } finally {
    sns.destroy();
    sqs.destroy();
  }
}

/** The alarm messages the platform's queue holds now, taken off it. */
export async function platformHeard(region: string, queueUrl: string): Promise<unknown[]> {
  const sqs = new SQSClient({ region });
  try {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    for (const m of Messages)
      await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
    return Messages.map((m) => JSON.parse(m.Body ?? 'null'));
  } finally {
    sqs.destroy();
  }
}

/**
 * A stream consumer as the sweep registers one on a busy stream: its status, or undefined when
 * none of that name is registered (`register` registers it first).
 */
export async function streamConsumer(
  region: string,
  stream: string,
  name: string,
  register = false,
): Promise<string | undefined> {
  // leaseq's own client: the SDK's speaks HTTP/2 to Kinesis, which the redirect to moto does not take.
  const requestHandler = createRequestHandler();
  const kinesis = createKinesisClient({ region, maxAttempts: 4, requestHandler });
  try {
    const { StreamDescriptionSummary } = await kinesis.send(
      new DescribeStreamSummaryCommand({ StreamName: stream }),
    );
    const StreamARN = StreamDescriptionSummary?.StreamARN;
    if (register) await kinesis.send(new RegisterStreamConsumerCommand({ StreamARN, ConsumerName: name }));
    const { ConsumerDescription } = await kinesis.send(
      new DescribeStreamConsumerCommand({ StreamARN, ConsumerName: name }),
    );
    return ConsumerDescription?.ConsumerStatus;
  } catch (err) {
    if ((err as Error).name === 'ResourceNotFoundException') return undefined;
    throw err;
  } finally {
    requestHandler.destroy();
  }
}
