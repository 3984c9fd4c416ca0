import type { TenantConfig } from '../core/config.js';
import { perObject } from '../core/per-object.js';
import type { AlarmState } from '../observability/alarm-evaluation.js';
import { queueAlarms } from '../observability/queue-alarms.js';
import type { AlarmsResponse } from '../wire/responses.js';

/**
 * The alarms of `state` with their rules' names, owners and pages. Loaded on first ask
 * (operations/alarms.ts): the rules' descriptions are the sweep's, not every api request's.
 */
export function alarmList(tenant: TenantConfig, state: AlarmState): AlarmsResponse['alarms'] {
  return rulesOf(tenant).flatMap((alarm) => {
    const breach = state[alarm.name];
    if (!breach) return [];
    return [
      {
        name: alarm.name,
        queue: alarm.namespace,
        kind: alarm.kind,
        state: breach.firing ? ('ALARM' as const) : ('PENDING' as const),
        since: new Date(breach.since).toISOString(),
        pages: alarm.pages,
        description: alarm.description,
      },
    ];
  });
}

/** A tenant's rules, made once: its config does not change while the function runs. */
const rulesOf = perObject(queueAlarms);
