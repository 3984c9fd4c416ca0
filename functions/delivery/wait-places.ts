import type { QueueConfig } from '../core/config.js';
import { placesPerEpoch, pollEpoch } from '../core/long-polls.js';
import type { WaitingPolls } from '../store/waiting-polls.js';

/** Gives a receive's place to wait back; never throws. */
export type GiveBack = () => void;

/**
 * A place for a receive to wait in, among its queue's (core/long-polls.ts), taken only once it
 * has waited FREE_WAIT_MS: a receive that answers sooner costs nothing here.
 */
export class WaitPlaces {
  constructor(private readonly polls: Pick<WaitingPolls, 'take' | 'giveBack'>) {}

  /** The place's give-back, or undefined when every place is taken: answer without waiting. */
  async take(queue: string, config: QueueConfig, now: number): Promise<GiveBack | undefined> {
    const epoch = pollEpoch(now);
    if (!(await this.polls.take(queue, epoch, placesPerEpoch(config)))) return undefined;
    // Beside the answer, not before it: a place not given back is gone with its epoch anyway.
    return () => void this.polls.giveBack(queue, epoch).catch(() => undefined);
  }
}
