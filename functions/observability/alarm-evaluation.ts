import type { AlarmNotice } from './alarm-message.js';
import type { AlarmReading, QueueAlarm } from './queue-alarms.js';

/**
 * How the sweep's alarms change from pass to pass, like CloudWatch's: an alarm fires once its
 * measure has stayed above the threshold for its `forSeconds`, and clears on the first pass that
 * finds it under. Plain data in, plain data out: the sweep keeps the state (store/alarm-states.ts)
 * and tells the alarm topic of each change.
 */

/**
 * An alarm whose measure is above its threshold: since when, and whether it has fired; and, for a
 * firing one whose measure went back under, since when it has been (it clears after its clearSeconds).
 */
export interface Breach {
  since: number;
  firing: boolean;
  under?: number;
}

/** The tenant's breaching alarms, by name; an alarm not here is OK. */
export type AlarmState = Record<string, Breach>;

export interface AlarmChange {
  alarm: QueueAlarm;
  state: 'ALARM' | 'OK';
  value: number;
  at: number;
}

export function evaluateAlarms(
  alarms: readonly QueueAlarm[],
  readings: ReadonlyMap<string, AlarmReading>,
  state: AlarmState,
  now: number,
): { state: AlarmState; changes: AlarmChange[] } {
  const next: AlarmState = {};
  const changes: AlarmChange[] = [];
  for (const alarm of alarms) {
    const was = state[alarm.name];
    const reading = readings.get(alarm.namespace);
    const value = reading ? alarm.measure(reading) : undefined;
    // No data this pass (a namespace not read, counts before a second pass): as it was.
    if (value === undefined) {
      if (was) next[alarm.name] = was;
      continue;
    }
    if (value <= alarm.threshold) {
      if (!was?.firing) continue;
      const under = was.under ?? now;
      if (now - under < alarm.clearSeconds * 1000) next[alarm.name] = { ...was, under };
      else changes.push({ alarm, state: 'OK', value, at: now });
      continue;
    }
    const since = was?.since ?? now;
    const firing = was?.firing || now - since >= alarm.forSeconds * 1000;
    if (firing && !was?.firing) changes.push({ alarm, state: 'ALARM', value, at: now });
    next[alarm.name] = { since, firing };
  }
  return { state: next, changes };
}

/** Whether two states differ (the sweep writes its state only when it does). */
export function sameAlarmState(a: AlarmState, b: AlarmState): boolean {
  const names = Object.keys(a);
  return (
    names.length === Object.keys(b).length &&
    names.every(
      (k) => b[k]?.since === a[k]?.since && b[k]?.firing === a[k]?.firing && b[k]?.under === a[k]?.under,
    )
  );
}

/** A change as the alarm topic tells it (observability/alarm-message.ts). */
export function changeNotice(change: AlarmChange): AlarmNotice {
  const { alarm, state, value, at } = change;
  const measured = `${alarm.kind} of ${alarm.namespace} at ${Math.round(value * 100) / 100}`;
  return {
    name: alarm.name,
    description: alarm.description,
    state,
    previous: state === 'ALARM' ? 'OK' : 'ALARM',
    reason:
      state === 'ALARM'
        ? `${measured}, above ${alarm.threshold}${alarm.forSeconds ? ` for ${alarm.forSeconds} s` : ''}`
        : `${measured}, back to ${alarm.threshold} or under`,
    at: new Date(at).toISOString(),
  };
}
