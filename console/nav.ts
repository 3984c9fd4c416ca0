/**
 * Where the reader is, kept in the URL's hash (`#/queues/jobs/dlq/<id>?consumer=c`), so a page
 * can be reloaded, bookmarked and shared, and the server serves one document for all of them.
 */

export const TABS = {
  dlq: 'Dead letters',
  trace: 'Trace',
  redrive: 'Redrive',
  parked: 'Parked keys',
  audit: 'Audit trail',
} as const;

export type Tab = keyof typeof TABS;

export interface QueueView {
  queue: string;
  tab: Tab;
  /** A dead letter's or a traced message's id, or a redrive's. */
  id?: string;
  /** A Lambda consumer's state instead of the queue's. */
  consumer?: string;
}

export type View = { page: 'queues' } | ({ page: 'queue' } & QueueView);

/** The client option that points a call at the view's Lambda consumer, when it names one. */
export function consumerScope(view: Pick<QueueView, 'consumer'>): { consumer?: string } {
  return view.consumer ? { consumer: view.consumer } : {};
}

const isTab = (tab: string | undefined): tab is Tab => tab !== undefined && Object.hasOwn(TABS, tab);

export function parseHash(hash: string): View {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?', 2);
  const [root, queue, tab, id] = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (root !== 'queues' || !queue) return { page: 'queues' };
  const consumer = new URLSearchParams(query).get('consumer') ?? undefined;
  return {
    page: 'queue',
    queue,
    tab: isTab(tab) ? tab : 'dlq',
    ...(id ? { id } : {}),
    ...(consumer ? { consumer } : {}),
  };
}

export function href(view: QueueView): string {
  const path = [view.queue, view.tab, ...(view.id ? [view.id] : [])].map(encodeURIComponent).join('/');
  return `#/queues/${path}${view.consumer ? `?consumer=${encodeURIComponent(view.consumer)}` : ''}`;
}
