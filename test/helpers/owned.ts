/**
 * A tenant file whose standard and critical queues name an owner and whose tenant has an on-call
 * route, as synth requires (functions/core/tiers.ts): for template tests about something else.
 */
export function owned<T extends { queues: Record<string, object>; alarms?: object }>(file: T): T {
  const queues = Object.fromEntries(
    Object.entries(file.queues).map(([name, q]) => [
      name,
      (q as { tier?: string }).tier === 'ephemeral' ? q : { owner: `${name}-team`, ...q },
    ]),
  );
  return { ...file, queues, alarms: { page: ['oncall@example.com'], ...file.alarms } };
}
