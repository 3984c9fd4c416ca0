import type { MessageTrace } from '../client/types.js';
import { notice } from './api.js';
import { attemptsTable } from './dlq.js';
import { field, h, show, table } from './dom.js';
import { time } from './format.js';
import { consumerScope } from './nav.js';
import type { QueuePage } from './queue.js';

/** Trace search: where a message is now, its attempts, and every event of its life. */

export function traceTab(el: HTMLElement, page: QueuePage): void {
  const { view } = page;
  const result = h('div');
  const form = h(
    'form',
    {
      class: 'inline',
      onsubmit: (event: Event) => {
        event.preventDefault();
        const id = field(form, 'id');
        if (id) page.go({ tab: 'trace', id });
      },
    },
    h('label', {}, 'Message id ', h('input', { name: 'id', required: true, value: view.id ?? '', size: 40 })),
    h('button', { type: 'submit' }, 'Trace'),
  );
  show(el, form, result);
  if (view.id) void trace(result, page, view.id);
}

async function trace(el: HTMLElement, page: QueuePage, id: string): Promise<void> {
  const { client, view, signal } = page;
  try {
    const t = await client.trace(view.queue, id, {
      ...consumerScope(view),
      signal,
    });
    if (!signal.aborted) show(el, ...timeline(t));
  } catch (error) {
    if (!signal.aborted) show(el, notice(error, `trace ${id}`));
  }
}

function timeline(t: MessageTrace): Node[] {
  return [
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'State'),
      h('dd', {}, h('span', { class: `badge state-${t.state}`, 'data-state': t.state }, t.state)),
      h('dt', {}, 'Enqueued'),
      h('dd', {}, time(t.enqueued_at)),
      h('dt', {}, 'Shard, sequence'),
      h('dd', {}, t.shard ? `${t.shard}, ${t.sequence ?? '—'}` : '—'),
      ...(t.traceparent ? [h('dt', {}, 'Trace context'), h('dd', {}, t.traceparent)] : []),
      ...(t.replay_id ? [h('dt', {}, 'Replay'), h('dd', {}, t.replay_id)] : []),
    ),
    h('h3', {}, 'Events'),
    table(
      ['At', 'Event', 'Detail'],
      t.events.map((e) => [
        time(e.at),
        e.event,
        h('code', {}, Object.keys(e.detail).length ? JSON.stringify(e.detail) : ''),
      ]),
      { class: 'events' },
    ),
    ...(t.attempts.length
      ? [h('h3', {}, `Failed attempts (${t.attempts.length})`), attemptsTable(t.attempts)]
      : []),
  ];
}
