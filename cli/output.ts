import Table from 'cli-table3';

/** Formatting for people (tables, ages, sizes) and the one JSON line for scripts. Pure but for `write*`. */

export function table(head: string[], rows: (string | number | null | undefined)[][]): string {
  const t = new Table({ head, style: { head: [], border: [] } });
  for (const row of rows) t.push(row.map((c) => (c === null || c === undefined ? '' : String(c))));
  return t.toString();
}

/** A two-column table of names and values. */
export function fields(rows: [string, string | number | null | undefined][]): string {
  const t = new Table({ style: { head: [], border: [] } });
  for (const [name, value] of rows)
    t.push({ [name]: value === null || value === undefined ? '' : String(value) });
  return t.toString();
}

/** 0 s, 42 s, 3 m 20 s, 2 h 5 m, 3 d 4 h. */
export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '-';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${s % 60} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} m`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** 1234567.8 → "1,234,568"; small fractions keep two decimals. */
export function num(n: number, decimals = 0): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

export function usd(n: number): string {
  return `$${num(n, 2)}`;
}

/** A payload shown in a table cell: its JSON, cut to `max` characters. */
export function preview(value: unknown, max = 60): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function percent(done: number, total: number): string {
  return total <= 0 ? '100 %' : `${Math.floor((done / total) * 100)} %`;
}

export function writeOut(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

export function writeJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
