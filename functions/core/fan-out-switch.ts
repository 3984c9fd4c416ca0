import { SHARD_READS_PER_SECOND } from './config.js';

/**
 * A stream on `fan_out: "when_busy"` (the default): dispatch's mapping reads through an enhanced
 * fan-out consumer only while produce outruns what the shard's reads admit at once, so an idle
 * tenant pays a shard and a busy one is pushed its records in ~70 ms (docs/streams.md, "Fan-out
 * when busy"). The sweep decides once a gauge pass, from the messages produced since the last;
 * a consumer bills by the consumer-shard-hour whatever it carries.
 */

/** Whether a stream's busy-time mapping reads through its consumer. */
export type FanOutState = 'off' | 'starting' | 'on';

/** Turns a stream's busy-time fan-out mapping on and off (aws/fan-out-mappings.ts on AWS; the local runtime's own). */
export interface FanOutSwitch {
  state(stream: string): Promise<FanOutState>;
  /** One step towards on (register the consumer; once it is active, map dispatch to it); called again each pass until 'on'. */
  turnOn(stream: string): Promise<FanOutState>;
  /** Deletes the mapping on the consumer, then deregisters the consumer. */
  turnOff(stream: string): Promise<void>;
}

/**
 * Messages a second a shard from which a stream is busy: what produce's passes admit at once (a
 * shard's five reads, less dispatch's two). Below it every request finds a read of its own, and
 * the polled mapping loses no latency a push would win.
 */
export const BUSY_PER_SHARD = SHARD_READS_PER_SECOND - 2;
/**
 * How long a stream stays quiet before its consumer goes: a consumer-shard-hour is billed whole,
 * and a stream that pauses between bursts keeps its push.
 */
export const QUIET_BEFORE_OFF_MS = 60 * 60_000;

/**
 * How the busy-time mapping reads. From the stream's oldest record, as dispatch's polled mapping
 * does: admission takes a run of the log only from just after a queue's last range, and a mapping
 * that started later (LATEST) would offer records with unadmitted ones before them, whose ranges
 * would then be cut past them. It catches up at the push's 2 MiB a second a shard, passing over
 * what is admitted already: batches of up to a thousand make that a few invocations a second; a
 * push under load carries what arrived since the last anyway.
 */
export const BUSY_MAPPING = { startingPosition: 'TRIM_HORIZON', batchSize: 1000 } as const;

export interface FanOutReading {
  state: FanOutState;
  /** Messages produced on the stream a second a shard since the last reading; undefined when there was none. */
  perShard: number | undefined;
  /** Since when the stream has been below BUSY_PER_SHARD while its consumer was there. */
  quietSince: number | undefined;
  now: number;
}

export interface FanOutStep {
  action: 'turn-on' | 'turn-off' | 'none';
  /** What to keep as the stream's quiet start. */
  quietSince: number | undefined;
}

/** What the sweep does about a stream on `when_busy` at a gauge pass. */
export function fanOutStep({ state, perShard, quietSince, now }: FanOutReading): FanOutStep {
  if (perShard !== undefined && perShard >= BUSY_PER_SHARD)
    return { action: state === 'on' ? 'none' : 'turn-on', quietSince: undefined };
  if (state === 'off') return { action: 'none', quietSince: undefined };
  // A first reading (a new sweep instance) counts as quiet: a stream nobody measures busy goes.
  const since = quietSince ?? now;
  if (now - since >= QUIET_BEFORE_OFF_MS) return { action: 'turn-off', quietSince: undefined };
  // A consumer still being set up is taken on to the end, then waits out its quiet hour.
  return { action: state === 'starting' ? 'turn-on' : 'none', quietSince: since };
}
