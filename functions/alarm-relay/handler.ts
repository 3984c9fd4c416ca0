import * as z from 'zod/mini';
import { lazySnsPublish } from '../aws/sns.js';
import { ENV } from '../core/runtime-config.js';
import { createAlarmRelay } from './app.js';

/** The alarm relay on AWS, invoked by the stack's CloudWatch alarms. */
const env = z
  .object({ [ENV.alarmTopicArn]: z.string().check(z.minLength(1)), [ENV.region]: z.string() })
  .parse(process.env);
export const handler = createAlarmRelay(
  env[ENV.alarmTopicArn],
  lazySnsPublish({ region: env[ENV.region], maxAttempts: 4 }),
);
