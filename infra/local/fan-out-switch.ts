import { BUSY_MAPPING, type FanOutState, type FanOutSwitch } from '../../functions/core/fan-out-switch.js';
import type { EventSource, KinesisHandler } from './event-source.js';

/**
 * Busy-time fan-out in the local runtime (core/fan-out-switch.ts): turning a stream on maps
 * dispatch to it on fan-out (event-source.ts: the stand-in for the push, outside the shard's five
 * reads) beside its polled mapping, from the stream's oldest record, as on AWS
 * (BUSY_MAPPING). Nothing to register: it is on at once.
 */
export class LocalFanOutSwitch implements FanOutSwitch {
  constructor(
    private readonly events: Pick<EventSource, 'map' | 'unmap' | 'has'>,
    private readonly dispatch: KinesisHandler,
  ) {}

  async state(stream: string): Promise<FanOutState> {
    return this.events.has(busyMappingName(stream)) ? 'on' : 'off';
  }

  async turnOn(stream: string): Promise<FanOutState> {
    if (!this.events.has(busyMappingName(stream)))
      await this.events.map({
        functionName: busyMappingName(stream),
        streamName: stream,
        handler: this.dispatch,
        batchSize: BUSY_MAPPING.batchSize,
        startingPosition: BUSY_MAPPING.startingPosition,
        fanOut: true,
      });
    return 'on';
  }

  async turnOff(stream: string): Promise<void> {
    await this.events.unmap(busyMappingName(stream));
  }
}

/** The busy-time mapping's name (and checkpoint file's): beside dispatch's polled `dispatch-…`. */
export function busyMappingName(stream: string): string {
  return `dispatch-busy-${stream}`;
}
