import * as z from 'zod/mini';
import type { Publish } from '../aws/sns.js';
import { alarmMessage } from '../observability/alarm-message.js';
import '../core/zod-mini.js';

/**
 * The alarm relay: CloudWatch invokes it when one of the stack's alarms changes state (its Lambda
 * action), and it tells the tenant's alarm topic in the shape the sweep's queue alarms use. The
 * topic is encrypted with SNS's own key, which CloudWatch cannot publish under; a function can.
 */

/** The fields of CloudWatch's alarm event the topic's message takes (a composite alarm's too). */
const alarmEventSchema = z.object({
  alarmData: z.object({
    alarmName: z.string(),
    state: z.object({ value: z.string(), reason: z.optional(z.string()), timestamp: z.string() }),
    previousState: z.optional(z.object({ value: z.string() })),
    configuration: z.optional(z.object({ description: z.optional(z.string()) })),
  }),
});

export function createAlarmRelay(topicArn: string, publish: Publish) {
  return async (event: unknown): Promise<void> => {
    const { alarmData: a } = alarmEventSchema.parse(event);
    const { subject, body } = alarmMessage({
      name: a.alarmName,
      description: a.configuration?.description ?? '',
      state: a.state.value,
      previous: a.previousState?.value ?? 'INSUFFICIENT_DATA',
      reason: a.state.reason ?? '',
      at: a.state.timestamp,
    });
    await publish(topicArn, subject, JSON.stringify(body));
  };
}
