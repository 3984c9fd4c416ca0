import { h } from './dom.js';
import { time } from './format.js';
import {
  BOX,
  highest,
  latest,
  linePath,
  MIN_SPAN_MS,
  niceMax,
  type Plot,
  position,
  summary,
  windowOf,
} from './plot-scale.js';

/**
 * A line chart drawn as SVG by hand (docs/decisions/0036-console-plots-svg-by-hand.md): a line a
 * series over the window's times, its highest value's label at the top, the window's first and
 * last times under it in the console's one time format, and a dot at each line's latest value.
 * What it says is in its `aria-label` too, for a reader who does not see it.
 */

const SVG = 'http://www.w3.org/2000/svg';

function svg(
  tag: string,
  attrs: Record<string, string | number>,
  ...children: (Node | string)[]
): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  el.append(...children);
  return el;
}

/** The plot as a figure: its title and legend (each line's latest value), then the chart. */
export function plotFigure(plot: Plot, attrs: Record<string, string> = {}): HTMLElement {
  const w = windowOf(plot.series) ?? { from: Date.now() - MIN_SPAN_MS, to: Date.now() };
  const top = (plot.top ?? niceMax)(highest(plot.series, w));
  const chart = svg(
    'svg',
    {
      viewBox: `0 0 ${BOX.width} ${BOX.height}`,
      role: 'img',
      'aria-label': summary(plot, w),
    },
    svg('line', { class: 'grid', x1: 0, x2: BOX.width, y1: BOX.top, y2: BOX.top }),
    svg('line', { class: 'axis', x1: 0, x2: BOX.width, y1: BOX.bottom, y2: BOX.bottom }),
    svg('text', { class: 'ymax', x: 2, y: BOX.top - 5 }, plot.format(top)),
    svg('text', { class: 'when', x: 0, y: BOX.height - 4 }, time(new Date(w.from))),
    svg(
      'text',
      { class: 'when', x: BOX.width, y: BOX.height - 4, 'text-anchor': 'end' },
      time(new Date(w.to)),
    ),
    ...plot.series.flatMap((s) => {
      const last = latest(s.points);
      const dot = last && position(last, w, top);
      return [
        svg('path', { class: `line ${s.tone}`, d: linePath(s.points, w, top) }),
        ...(dot ? [svg('circle', { class: `dot ${s.tone}`, cx: dot.x, cy: dot.y, r: 3 })] : []),
      ];
    }),
  );
  return h(
    'figure',
    { class: 'plot', ...attrs },
    h(
      'figcaption',
      {},
      h('span', { class: 'label' }, plot.title),
      ...plot.series.map((s) => {
        const last = latest(s.points);
        return h(
          'span',
          { class: `key ${s.tone}` },
          h('span', { class: 'swatch', 'aria-hidden': 'true' }),
          `${s.name} `,
          h('strong', {}, last ? plot.format(last.v) : '—'),
        );
      }),
    ),
    chart,
  );
}
