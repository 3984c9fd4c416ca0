import { notice } from './api.js';
import { field, h, show, table } from './dom.js';
import { time } from './format.js';
import { consumerScope, href } from './nav.js';
import type { QueuePage } from './queue.js';

/**
 * An ordered queue's parked keys (held behind a dead message), each with a skip that releases the
 * key without its dead message: a reason is required, as the API requires, for the audit trail.
 */

export function parkedTab(el: HTMLElement, page: QueuePage): void {
  void parkedKeys(el, page);
}

async function parkedKeys(el: HTMLElement, page: QueuePage, done?: string): Promise<void> {
  const { client, view, queue, signal } = page;
  const scope = consumerScope(view);
  if (!queue.ordered) {
    show(el, h('p', { class: 'muted' }, `${view.queue} is not ordered: its keys are never parked.`));
    return;
  }
  try {
    const keys = await client.parkedKeys(view.queue, { ...scope, signal });
    if (signal.aborted) return;
    const rows = keys.map((k) => {
      const status = h('span');
      const form: HTMLFormElement = h(
        'form',
        {
          class: 'inline',
          'data-skip': k.key,
          onsubmit: async (event: Event) => {
            event.preventDefault();
            const reason = field(form, 'reason');
            if (!reason) return;
            try {
              const released = await client.skipKey(view.queue, k.key, reason, scope);
              await parkedKeys(
                el,
                page,
                `Skipped ${released.key}: ${released.released} held message(s) let through.`,
              );
            } catch (error) {
              show(status, notice(error, `skip ${k.key}`));
            }
          },
        },
        h('input', {
          name: 'reason',
          required: true,
          placeholder: 'why (for the audit trail)',
          'aria-label': `Reason to skip ${k.key}`,
        }),
        h('button', { type: 'submit' }, 'Skip'),
        status,
      );
      return [
        h('strong', {}, k.key),
        time(k.parked_at),
        h('a', { href: href({ ...view, tab: 'dlq', id: k.dead_message_id }) }, k.dead_message_id),
        k.held,
        form,
      ];
    });
    show(
      el,
      done ? h('p', { class: 'notice ok', role: 'status' }, done) : '',
      rows.length
        ? table(
            ['Key', 'Parked at', 'Dead message', 'Held', 'Skip (releases the key without its dead message)'],
            rows,
            {
              class: 'parked',
            },
          )
        : h('p', { class: 'muted' }, 'No parked keys.'),
    );
  } catch (error) {
    if (!signal.aborted) show(el, notice(error, `see the parked keys of ${view.queue}`));
  }
}
