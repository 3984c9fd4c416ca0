/**
 * The console's one way to make elements: text goes in as text nodes, never as HTML, so what the
 * API answers (payloads, errors, keys) cannot inject markup, and no framework is needed.
 */

export type Child = Node | string | number | null | undefined | false;
type Attr = string | number | boolean | undefined | ((event: Event) => void);

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, Attr> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, '');
    else if (value !== false && value !== undefined) el.setAttribute(name, String(value));
  }
  el.append(...nodes(children));
  return el;
}

/** Replaces what `el` shows. */
export function show(el: Element, ...children: Child[]): void {
  el.replaceChildren(...nodes(children));
}

const nodes = (children: Child[]): (Node | string)[] =>
  children.flatMap((c) =>
    c === null || c === undefined || c === false ? [] : [typeof c === 'number' ? String(c) : c],
  );

/** A table with a header row; `rows` are cells (a `td` of its own where it spans columns). */
export function table(head: string[], rows: Child[][], attrs: Record<string, Attr> = {}): HTMLTableElement {
  return h(
    'table',
    attrs,
    h('thead', {}, h('tr', {}, ...head.map((c) => h('th', {}, c)))),
    h(
      'tbody',
      {},
      ...rows.map((row) =>
        h('tr', {}, ...row.map((c) => (c instanceof HTMLTableCellElement ? c : h('td', {}, c)))),
      ),
    ),
  );
}

/** A form's named field, as text. */
export function field(form: HTMLFormElement, name: string): string {
  const value = new FormData(form).get(name);
  return typeof value === 'string' ? value.trim() : '';
}
