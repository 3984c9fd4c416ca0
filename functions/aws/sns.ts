import type { SNSClientConfig } from '@aws-sdk/client-sns';

export type Publish = (topicArn: string, subject: string, message: string) => Promise<unknown>;

/** SNS's Publish with the client made on first use, from `./sns-client.js` (a file beside the bundle). */
export function lazySnsPublish(config: SNSClientConfig): Publish {
  let loaded: Promise<Publish> | undefined;
  return async (topicArn, subject, message) => {
    loaded ??= import('./sns-client.js').then((module) => module.snsPublisher(config));
    return (await loaded)(topicArn, subject, message);
  };
}
