import { describe, expect, it } from 'vitest';
import { checkInvariants, type EndState, emptyAfterDrain, restartsStayFast } from '../../chaos/checks.js';
import { type Delivery, History, lifeOf, type SettleOutcome } from '../../chaos/history.js';
import { checkJobs } from '../../chaos/job-checks.js';
import type { JobsEnd } from '../../chaos/jobs.js';
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
    deliver(id: string, atMs: number, leaseMs = 2000, replayId?: string): Delivery {
      const p = history.produced.get(id);
      const life = lifeOf(id, replayId);
      const attempt = (attempts.get(life) ?? 0) + 1;
      attempts.set(life, attempt);
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
          ...(replayId !== undefined ? { replay_id: replayId } : {}),
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

describe('the restart time check', () => {
  const flat = Array.from({ length: 30 }, (_, i) => 2000 + (i % 3) * 100);
  it('passes restarts that start as fast at the end as at the start, and runs of fewer than twenty', () => {
    expect(restartsStayFast(flat).violations).toEqual([]);
    // A median: one slow restart among the last ten is not growth.
    expect(restartsStayFast([...flat, 9000]).violations).toEqual([]);
    expect(restartsStayFast([...flat.slice(0, 19), 9000]).violations).toEqual([]);
  });

  it('catches the last ten starting more than 20 % slower than the first ten', () => {
    const last = (ms: number) => [...flat.slice(0, 20), ...Array.from({ length: 10 }, () => ms)];
    expect(restartsStayFast(last(2520)).violations).toEqual([]);
    expect(restartsStayFast(last(2600)).violations).toEqual(['first 10 2100 ms, last 10 2600 ms (1.24×)']);
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

describe('the operator jobs checks', () => {
  /**
   * w-0 and w-1 acked, then replayed (rp-1); w-2 dead-lettered, then redriven (rd-1). A copy's
   * retry and the redriven message end acked.
   */
  const run = () => {
    const b = build();
    for (const id of ['w-0', 'w-1', 'w-2']) b.produce('work', id);
    b.settle(b.deliver('w-0', 0), 'ack', 10, 'acked');
    b.settle(b.deliver('w-1', 0), 'ack', 10, 'acked');
    b.settle(b.deliver('w-2', 0), 'nack', 10, 'nacked');
    b.history.jobs.replays.push({
      queue: 'work',
      replayId: 'rp-1',
      requestedAt: b.t(100),
      ids: ['w-0', 'w-1'],
    });
    b.settle(b.deliver('w-0', 200, 2000, 'rp-1'), 'ack', 210, 'acked');
    b.settle(b.deliver('w-1', 200, 2000, 'rp-1'), 'nack', 210, 'nacked');
    b.settle(b.deliver('w-1', 1300, 2000, 'rp-1'), 'ack', 1310, 'acked');
    const dead = new Map([['w-2', b.t(11)]]);
    b.history.jobs.redrives.push({
      queue: 'work',
      redriveId: 'rd-1',
      requestedAt: b.t(300),
      remainingAtStart: 1,
      deadBefore: dead,
      deadAfter: dead,
    });
    b.settle(b.deliver('w-2', 400), 'ack', 410, 'acked');
    const jobs = (): JobsEnd => ({
      replays: new Map([['rp-1', { status: 'done', replayed: 2, scanned: 3, expected: 2 }]]),
      redrives: new Map([
        [
          'rd-1',
          {
            status: 'done',
            moved: 1,
            remaining: 0,
            expected: 1,
            listed: { before: 1, after: 1 },
            taken: new Set(['w-2']),
          },
        ],
      ]),
    });
    return { b, jobs };
  };
  const failingAll = (history: History, end: EndState, jobs: JobsEnd) =>
    Object.fromEntries(
      [...checkInvariants(history, end, 'ordered'), ...checkJobs(history, end, jobs)]
        .filter((i) => !i.ok)
        .map((i) => [i.name, i.violations]),
    );

  it('pass a replay copy delivered after its message was acked, its retry, and a redrive that took its dead letters', () => {
    const { b, jobs } = run();
    expect(failingAll(b.history, ended(), jobs())).toEqual({});
  });

  it('catch a redrive that counted a message twice, or took one it does not count', () => {
    const { b, jobs } = run();
    const twice = jobs();
    (twice.redrives.get('rd-1') as { moved: number }).moved = 2;
    expect(failingAll(b.history, ended(), twice)).toEqual({
      'a redrive moves exactly the dead letters it took, each once': [
        'redrive rd-1 of work: moved 2, but 1 dead letters were redriven by it',
        'redrive rd-1 of work: moved 2 of the 1 it counted at its start',
      ],
    });
    const left = jobs();
    (left.redrives.get('rd-1') as { taken: Set<string> }).taken = new Set();
    expect(Object.values(failingAll(b.history, ended(), left))).toEqual([
      [
        'redrive rd-1 of work: moved 1, but 0 dead letters were redriven by it',
        'redrive rd-1 of work: w-2, dead before its start, not taken',
      ],
    ]);
  });

  it('catch a redriven message never delivered again', () => {
    const { b, jobs } = run();
    b.history.deliveries.pop();
    const violations = failingAll(b.history, ended(), jobs())[
      'a redrive moves exactly the dead letters it took, each once'
    ];
    expect(violations).toEqual([
      'redrive rd-1 of work: w-2 redriven but never delivered again (requested +0.300s)',
    ]);
  });

  it('catch a replay whose count is not the number of messages it was asked for, or a copy of another', () => {
    const { b, jobs } = run();
    const more = jobs();
    (more.replays.get('rp-1') as { replayed: number }).replayed = 3;
    b.settle(b.deliver('w-2', 500, 2000, 'rp-1'), 'ack', 510, 'acked');
    expect(failingAll(b.history, ended(), more)).toEqual({
      'a replay copies exactly the messages of its window and filter, each once': [
        'replay rp-1 of work: replayed 3 copies of the 2 messages asked for',
        'replay rp-1 of work: delivered a copy of w-2, which it was not asked for',
      ],
    });
  });

  it('catch a copy whose retry lost its replay_id: a delivery after a confirmed ack', () => {
    const { b, jobs } = run();
    b.deliver('w-0', 2500);
    expect(failingAll(b.history, ended(), jobs())).toEqual({
      'no delivery after a confirmed ack (a replay copy counted as its own life)': [
        'w-0: attempt 2 delivered +2.500s after an ack answered acked +0.011s',
      ],
      'every delivery of a replayed message carries its replay_id': [
        'w-0: attempt 2 delivered +2.500s without replay_id, after replay rp-1 (+0.100s) of it, acked before',
      ],
    });
  });

  it('catch a replay copy that never ended acked or dead, and a replay_id of no replay', () => {
    const { b, jobs } = run();
    b.history.deliveries.splice(
      b.history.deliveries.findIndex((d) => d.id === 'w-1' && d.attempt === 2 && d.replayId === 'rp-1'),
      1,
    );
    b.deliver('w-0', 600, 2000, 'rp-9');
    const failed = failingAll(b.history, ended(), jobs());
    expect(failed['no accepted message lost (each ends acked or dead)']?.[0]).toMatch(
      /^work\/w-1: copy of replay rp-1, 1 deliveries \(last \+0\.200s, attempt 1, nack → nacked\)/,
    );
    expect(failed['every delivery of a replayed message carries its replay_id']).toEqual([
      'w-0: delivered +0.600s with replay_id rp-9, of no replay',
    ]);
  });
});
