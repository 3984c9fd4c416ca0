import { PublishCommand, SNSClient, type SNSClientConfig } from '@aws-sdk/client-sns';

/**
 * SNS's one call leaseq makes: the sweep's alarm changes to the tenant's topic. Loaded on first
 * use (aws/sns.ts), from a file beside the bundle: a sweep whose alarms never change never parses it.
 */
export function snsPublisher(config: SNSClientConfig) {
  const client = new SNSClient(config);
  return (topicArn: string, subject: string, message: string) =>
    client.send(new PublishCommand({ TopicArn: topicArn, Subject: subject, Message: message }));
}
