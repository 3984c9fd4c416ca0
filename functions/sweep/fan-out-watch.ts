import { type TenantConfig, tenantStreams } from '../core/config.js';
import { type FanOutState, type FanOutSwitch, fanOutStep } from '../core/fan-out-switch.js';
import type { FanOutQuiet } from '../store/fan-out-quiet.js';

export interface FanOutWatchDeps {
  tenant: TenantConfig;
  switch: FanOutSwitch;
  quiet: Pick<FanOutQuiet, 'all' | 'set'>;
  logger: Record<'info' | 'warn', (message: string, extra: Record<string, unknown>) => void>;
  now?: () => number;
}

/**
 * The sweep's part of busy-time fan-out (core/fan-out-switch.ts): after each gauge pass, each
 * stream on `when_busy` is measured by what its queues produced since the pass before, and its
 * consumer turned on or off. A failed switch is logged and tried again at the next pass: the
 * polled mapping admits meanwhile.
 */
export class FanOutWatch {
  /** The streams it switches: their shards and queues. */
  private readonly streams: { name: string; shards: number; queues: string[] }[];
  /** Each stream's produced total at the pass before, and when. */
  private previous: { at: number; produced: Map<string, number> } | undefined;

  constructor(private readonly deps: FanOutWatchDeps) {
    this.streams = [...tenantStreams(deps.tenant)]
      .filter(([, s]) => s.fan_out === 'when_busy')
      .map(([name, s]) => ({ name, shards: s.shards, queues: s.queues }));
  }

  /** After a gauge pass: `produced` is each queue's produced total. */
  async observe(producedByQueue: ReadonlyMap<string, number>): Promise<void> {
    if (!this.streams.length) return;
    const now = this.deps.now?.() ?? Date.now();
    const produced = new Map(
      this.streams.map((s) => [s.name, s.queues.reduce((n, q) => n + (producedByQueue.get(q) ?? 0), 0)]),
    );
    const before = this.previous;
    this.previous = { at: now, produced };
    const seconds = before ? (now - before.at) / 1000 : 0;
    const quiet = await this.deps.quiet.all();
    for (const stream of this.streams) {
      try {
        const state = await this.deps.switch.state(stream.name);
        const was = before?.produced.get(stream.name);
        const perShard =
          was === undefined || seconds <= 0
            ? undefined
            : Math.max(0, (produced.get(stream.name) ?? 0) - was) / seconds / stream.shards;
        const since = quiet.get(stream.name);
        const step = fanOutStep({ state, perShard, quietSince: since, now });
        await this.act(stream.name, step.action, state);
        if (since !== step.quietSince) await this.deps.quiet.set(stream.name, step.quietSince);
      } catch (err) {
        this.deps.logger.warn('fan-out switch failed', { stream: stream.name, error: String(err) });
      }
    }
  }

  private async act(stream: string, action: 'turn-on' | 'turn-off' | 'none', state: FanOutState) {
    if (action === 'turn-on') {
      const next = await this.deps.switch.turnOn(stream);
      if (next !== state) this.deps.logger.info('fan-out', { stream, state: next });
    } else if (action === 'turn-off') {
      await this.deps.switch.turnOff(stream);
      this.deps.logger.info('fan-out', { stream, state: 'off' });
    }
  }
}
