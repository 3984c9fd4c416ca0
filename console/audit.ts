import { notice } from './api.js';
import { h, show, table } from './dom.js';
import { time } from './format.js';
import type { QueuePage } from './queue.js';

/** Who skipped, purged, redrove, replayed or paused what on the queue, newest first. */

const LIMIT = 100;

export function auditTab(el: HTMLElement, page: QueuePage): void {
  void audit(el, page);
}

async function audit(el: HTMLElement, page: QueuePage): Promise<void> {
  const { client, view, signal } = page;
  try {
    const entries = await client.audit(view.queue, { limit: LIMIT }, { signal });
    if (signal.aborted) return;
    show(
      el,
      h('p', { class: 'muted' }, `The queue's whole trail, its consumers' too (the last ${LIMIT}).`),
      entries.length
        ? table(
            ['At', 'Action', 'By', 'Consumer', 'Target', 'Reason', 'Detail'],
            entries.map((e) => [
              time(e.at),
              h('strong', {}, e.action),
              e.actor,
              e.consumer ?? '—',
              e.target,
              e.reason ?? '—',
              h('code', {}, e.detail ? JSON.stringify(e.detail) : ''),
            ]),
            { class: 'audit' },
          )
        : h('p', { class: 'muted' }, 'Nothing done yet.'),
    );
  } catch (error) {
    if (!signal.aborted) show(el, notice(error, `see the audit trail of ${view.queue}`));
  }
}
