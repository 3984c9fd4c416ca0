import { describe, expect, it } from 'vitest';
import { checkInvariants, type EndState, emptyAfterDrain } from '../../chaos/checks.js';
import { type Delivery, History, type SettleOutcome } from '../../chaos/history.js';
import { checkPushCalls, pushFigures } from '../../chaos/push-calls.js';
import type { PushCall } from '../../chaos/push-consumer.js';

/**
 * The chaos checker on hand-made histories: it must catch each kind of violation, and must not
 * call at-least-once redelivery after a kill an order violation.
 */

function build() {
  const history = new History();
  const t = (ms: number) => history.startedAt + ms;
  const attempts = new Map<string, number>();
  return {
    history,
    t,
    produce(queue: string, id: string, key?: string, seq?: number) {
      history.sent(queue, { id, ...(key !== undefined ? { key, seq } : {}) });
      history.produceResult({ message_id: id, status: 'accepted' });
    },
    deliver(id: string, atMs: number, leaseMs = 2000): Delivery {
      const p = history.produced.get(id);
      const attempt = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, attempt);
      return history.delivered(
        p?.queue ?? 'work',
        'c0',
        {
          message_id: id,
          receipt: `${id}#${attempt}`,
          key: p?.key ?? null,
          payload: { id, key: p?.key, seq: p?.seq },
          headers: {},
          attempt,
          enqueued_at: new Date(t(0)).toISOString(),
          lease_expires_at: new Date(t(atMs + leaseMs)).toISOString(),
        },
        t(atMs),
      );
    },
    settle(d: Delivery, kind: 'ack' | 'nack', atMs: number, outcome: SettleOutcome) {
      const s = history.settling(d, kind);
      s.sentAt = t(atMs);
      history.settled(s, outcome);
      s.answeredAt = t(atMs + 1);
    },
  };
}

const ended = (dead: [string, number][] = []): EndState => ({
  dead: new Map(dead),
  ackedByTrace: new Set(),
  handled: new Set(),
  unsettledStates: new Map(),
});

function failing(history: History, end: EndState): Record<string, string[]> {
  return Object.fromEntries(
    checkInvariants(history, end, 'ordered')
      .filter((i) => !i.ok)
      .map((i) => [i.name, i.violations]),
  );
}

describe('chaos invariants', () => {
  it('pass a clean history', () => {
    const b = build();
    b.produce('ordered', 'k-0', 'k', 0);
    b.produce('ordered', 'k-1', 'k', 1);
    b.produce('work', 'w-0');
    b.settle(b.deliver('k-0', 0), 'ack', 10, 'acked');
    b.settle(b.deliver('k-1', 20), 'ack', 30, 'acked');
    b.settle(b.deliver('w-0', 0), 'nack', 5, 'nacked');
    b.settle(b.deliver('w-0', 3000), 'ack', 3010, 'acked');
    expect(failing(b.history, ended())).toEqual({});
  });

  it('catch an accepted message neither acked nor dead, unless dead or acked by its trace', () => {
    const b = build();
    b.produce('work', 'w-0');
    b.settle(b.deliver('w-0', 0), 'ack', 10, 'unknown');
    expect(Object.keys(failing(b.history, ended()))).toEqual([
      'no accepted message lost (each ends acked or dead)',
    ]);
    expect(failing(b.history, ended([['w-0', b.t(20)]]))).toEqual({});
    expect(failing(b.history, { ...ended(), ackedByTrace: new Set(['w-0']) })).toEqual({});
    expect(failing(b.history, { ...ended(), handled: new Set(['w-0']) })).toEqual({});
  });

  it('catch a delivery before the previous message of its key was acked', () => {
    const b = build();
    b.produce('ordered', 'k-0', 'k', 0);
    b.produce('ordered', 'k-1', 'k', 1);
    const first = b.deliver('k-0', 0);
    const second = b.deliver('k-1', 5);
    b.settle(first, 'ack', 10, 'acked');
    b.settle(second, 'ack', 20, 'acked');
    const violations = failing(b.history, ended())['per-key order on the ordered queue'];
    expect(violations?.[0]).toContain('k: seq 1 delivered +0.005s (attempt 1) before seq 0 was acked');
  });

  it('catch acks out of order, and an ack answered stale does not release the key', () => {
    const b = build();
    b.produce('ordered', 'k-0', 'k', 0);
    b.produce('ordered', 'k-1', 'k', 1);
    const slow = b.deliver('k-0', 0);
    const again = b.deliver('k-0', 3000);
    b.settle(slow, 'ack', 3100, 'stale');
    b.settle(b.deliver('k-1', 3200), 'ack', 3300, 'acked');
    b.settle(again, 'ack', 4000, 'acked');
    const violations = failing(b.history, ended())['per-key order on the ordered queue'] ?? [];
    expect(violations.join('\n')).toContain('seq 1 delivered +3.200s (attempt 1) before seq 0 was acked');
    expect(violations.join('\n')).toContain('seq 1 delivered +3.200s while seq 0 was in flight');
    expect(violations.join('\n')).toContain('seq 0 acked +4.000s, after seq 1');
  });

  it('count a redelivery after an unanswered ack as a duplicate, not an order violation', () => {
    const b = build();
    b.produce('ordered', 'k-0', 'k', 0);
    b.produce('ordered', 'k-1', 'k', 1);
    b.settle(b.deliver('k-0', 0), 'ack', 10, 'unknown');
    const next = b.deliver('k-1', 20);
    b.settle(b.deliver('k-0', 25), 'ack', 30, 'acked');
    b.settle(next, 'ack', 40, 'acked');
    expect(failing(b.history, ended())).toEqual({});
  });

  it('let a key move on once its message is dead, not before', () => {
    const b = build();
    b.produce('ordered', 'k-0', 'k', 0);
    b.produce('ordered', 'k-1', 'k', 1);
    b.settle(b.deliver('k-0', 0), 'nack', 10, 'nacked');
    b.settle(b.deliver('k-1', 20), 'ack', 30, 'acked');
    expect(failing(b.history, ended([['k-0', b.t(15)]]))).toEqual({});
    expect(Object.keys(failing(b.history, ended([['k-0', b.t(25)]])))).toEqual([
      'per-key order on the ordered queue',
    ]);
  });

  it('catch an ack that succeeded with a receipt known to be stale', () => {
    const b = build();
    b.produce('work', 'w-0');
    const old = b.deliver('w-0', 0);
    b.settle(b.deliver('w-0', 3000), 'ack', 3010, 'acked');
    b.settle(old, 'ack', 3500, 'acked');
    expect(failing(b.history, ended())['no ack or nack with a known-stale receipt succeeded']).toEqual([
      'w-0: ack of attempt 1 (delivered +0.000s) sent +3.500s succeeded although attempt 2 was delivered +3.000s',
    ]);
  });

  it('catch a delivery whose payload is not what was sent, and API answers against the contract', () => {
    const b = build();
    b.produce('work', 'w-0');
    b.history.delivered(
      'work',
      'c0',
      {
        message_id: 'w-0',
        receipt: 'r',
        key: null,
        payload: { id: 'w-1' },
        headers: {},
        attempt: 1,
        enqueued_at: '',
        lease_expires_at: new Date(b.t(2000)).toISOString(),
      },
      b.t(0),
    );
    b.history.produceResult({
      message_id: 'w-0',
      status: 'failed',
      error: { code: 'X', message: 'no', retryable: false },
    });
    expect(Object.keys(failing(b.history, ended()))).toEqual([
      'no accepted message lost (each ends acked or dead)',
      'every delivery is of a message sent, with its payload intact',
      'API: failed is retryable',
    ]);
  });
});

describe('the end state check', () => {
  it('catches a queue or consumer still holding something after the drain', () => {
    const empty = { ready: 0, inFlight: 0, delayed: 0, held: 0 };
    expect(emptyAfterDrain([{ name: 'work', ...empty }]).ok).toBe(true);
    const left = emptyAfterDrain([
      { name: 'work', ...empty },
      { name: 'pushed?consumer=chaos', ...empty, inFlight: 2 },
      { name: 'ordered', ...empty, held: 1 },
    ]);
    expect(left.ok).toBe(false);
    expect(left.violations).toEqual([
      'pushed?consumer=chaos: 0 waiting, 2 in flight, 0 delayed, 0 held',
      'ordered: 0 waiting, 0 in flight, 0 delayed, 1 held',
    ]);
  });
});

describe('the Lambda consumer checks', () => {
  const run = () => {
    const b = build();
    b.produce('pushed', 'p-0', 'k', 0);
    b.produce('pushed', 'p-1', 'k', 1);
    const call = (
      phase: PushCall['phase'],
      id: string,
      seq: number,
      attempt: number,
      ok?: boolean,
    ): PushCall => ({
      phase,
      id,
      key: 'k',
      seq,
      attempt,
      at: b.t(seq * 10 + attempt),
      ...(phase === 'start' ? { intact: true } : { ok }),
    });
    return { b, call };
  };
  const failingPush = (history: History, calls: PushCall[]) =>
    Object.fromEntries(
      checkPushCalls(history, calls)
        .filter((i) => !i.ok)
        .map((i) => [i.name, i.violations]),
    );

  it('pass calls in key order, with a failed attempt and a call again after a kill', () => {
    const { b, call } = run();
    const calls = [
      call('start', 'p-0', 0, 1),
      call('end', 'p-0', 0, 1, false),
      call('start', 'p-0', 0, 2),
      call('end', 'p-0', 0, 2, true),
      // Killed before the ack landed: handled again, then its successor.
      call('start', 'p-0', 0, 2),
      call('end', 'p-0', 0, 2, true),
      call('start', 'p-1', 1, 1),
      call('end', 'p-1', 1, 1, true),
    ];
    expect(failingPush(b.history, calls)).toEqual({});
    expect(pushFigures(calls)).toEqual({ calls: 4, handled: 2, failedAttempts: 1, duplicates: 1 });
  });

  it('catch a call before the previous message of its key returned, and a payload not sent', () => {
    const { b, call } = run();
    const calls = [
      call('start', 'p-0', 0, 1),
      call('start', 'p-1', 1, 1),
      call('end', 'p-0', 0, 1, true),
      { ...call('start', 'p-1', 1, 2), intact: false },
    ];
    expect(failingPush(b.history, calls)).toEqual({
      'per-key order of the Lambda consumer on the push queue': [
        'k: seq 1 called +0.011s (attempt 1) before seq 0 returned',
      ],
      'every Lambda consumer call is of a message sent, with its payload intact': [
        'p-1 called +0.012s (attempt 2) with a payload other than the one sent',
      ],
    });
  });
});
