/** How figures and times read on the page. */

/** 0 → "0 s", 75 → "1 m 15 s", 7300 → "2 h 1 m". */
export function age(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${s % 60} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} m`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/**
 * A time as UTC ISO 8601, to the millisecond: what the API answers and the command line prints,
 * so a time copied from one is found in the other and in the logs.
 */
export function time(iso: string | Date | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toISOString();
}

export function count(n: number | null | undefined): string {
  return n === null || n === undefined ? '—' : n.toLocaleString();
}

/** A rate: 0.33/s, 12/s, 1,250/s. */
export function perSecond(n: number): string {
  return `${n.toLocaleString(undefined, { maximumFractionDigits: n < 10 ? 2 : 0 })}/s`;
}

/** A JSON value as indented text, for payloads and details. */
export function pretty(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}
