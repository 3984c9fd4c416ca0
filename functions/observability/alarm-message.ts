/**
 * What the tenant's alarm topic carries, whoever evaluated the alarm (the sweep, or CloudWatch
 * through the alarm relay): shaped like CloudWatch's own alarm messages, so the owners' and the
 * pager's subscriptions filter on `AlarmName` alike for every alarm.
 */
export interface AlarmNotice {
  name: string;
  description: string;
  state: string;
  previous: string;
  reason: string;
  /** ISO 8601. */
  at: string;
}

export function alarmMessage(n: AlarmNotice): { subject: string; body: Record<string, unknown> } {
  return {
    // SNS takes a subject of at most 100 characters.
    subject: `${n.state}: ${n.name}`.slice(0, 100),
    body: {
      AlarmName: n.name,
      AlarmDescription: n.description,
      NewStateValue: n.state,
      OldStateValue: n.previous,
      NewStateReason: n.reason,
      StateChangeTime: n.at,
    },
  };
}
