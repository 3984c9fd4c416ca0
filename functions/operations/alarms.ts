import type { TenantConfig } from '../core/config.js';
import type { AlarmStates } from '../store/alarm-states.js';
import type { AlarmsResponse } from '../wire/responses.js';

/**
 * The queues' alarms above their threshold now, as the sweep last evaluated them
 * (observability/alarm-evaluation.ts): the ones that fired, and the ones still within the time
 * they must last. The listing is a file loaded on first ask (alarm-list.ts).
 */
export class Alarms {
  private loaded: Promise<typeof import('./alarm-list.js')> | undefined;

  constructor(private readonly deps: { tenant: TenantConfig; states: Pick<AlarmStates, 'get'> }) {}

  async list(): Promise<AlarmsResponse> {
    this.loaded ??= import('./alarm-list.js');
    const [{ alarms: state }, { alarmList }] = await Promise.all([this.deps.states.get(), this.loaded]);
    return { alarms: alarmList(this.deps.tenant, state) };
  }
}
