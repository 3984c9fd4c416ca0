import type { Logger } from '@aws-lambda-powertools/logger';
import type { Publish } from '../aws/sns.js';
import { type AlarmChange, changeNotice } from '../observability/alarm-evaluation.js';
import { alarmMessage } from '../observability/alarm-message.js';

/**
 * Tells of a queue alarm's change: in the sweep's log always, and on the tenant's alarm topic
 * where the stack has one (the local runtime has none: its log is where an operator looks).
 */
export function alarmNotifier(
  logger: Pick<Logger, 'warn' | 'info'>,
  topic?: { arn: string; publish: Publish },
): (change: AlarmChange) => Promise<void> {
  return async (change) => {
    const { subject, body } = alarmMessage(changeNotice(change));
    (change.state === 'ALARM' ? logger.warn : logger.info).call(logger, subject, body);
    if (topic) await topic.publish(topic.arn, subject, JSON.stringify(body));
  };
}
