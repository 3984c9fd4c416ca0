// The keys of the writes dynalite has not finished, on disk (emulator-thread.mjs runs it). dynalite
// writes an item's index entries and the item as separate LevelDB writes, so a SIGKILL can leave
// them apart, but only for a write it had started and not answered: a line naming the write's keys
// is appended before dynalite reads the request, and a line settling it once it answers. A start
// then checks the items of the unsettled ones (index-repair.ts), not the whole table, so a
// restart's cost does not grow with the data.
// Plain JavaScript, as the thread that loads it.
import { closeSync, existsSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']);
/** leaseq's tables are keyed by these (resources.ts); a put names its item, not its key. */
const KEY_ATTRIBUTES = ['pk', 'sk'];
/** Stands for every item until a full repair: a folder first opened without a journal. */
const UNKNOWN = `${JSON.stringify({ unknown: true })}\n`;
/** Lines appended before the file is rewritten with only what is still unsettled. */
const ROTATE_AFTER = 2000;

/** @typedef {{ table: string; key: Record<string, unknown> }} JournalEntry (key as DynamoDB JSON) */

export class WriteJournal {
  /**
   * Entries a previous process left unsettled, kept until `settleCarried`; undefined when any item
   * may be torn (the folder had no journal, or no full repair has run since).
   * @type {JournalEntry[] | undefined}
   */
  carried;
  /** @type {Map<number, string>} */
  #open = new Map();
  #next = 0;
  #appended = 0;
  /** @type {number} */
  #fd;
  /** @param {string} path */
  constructor(path) {
    this.path = path;
    this.carried = existsSync(path) ? readEntries(path) : undefined;
    this.#fd = this.#rewrite();
  }

  /**
   * Records each write request before dynalite reads it, and settles it when dynalite answers below
   * 500 (after both of its LevelDB writes). Listeners run in order: this one's `end` runs first.
   * @param {import('node:http').Server} server
   */
  watch(server) {
    server.prependListener('request', (req, res) => {
      const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
      if (!WRITES.has(operation)) return;
      /** @type {Buffer[]} */
      const chunks = [];
      req.on('data', (chunk) => chunks.push(chunk));
      req.on('end', () => {
        const id = this.#record(operation, Buffer.concat(chunks));
        if (id === undefined) return;
        const end = res.end;
        res.end = (...args) => {
          // A 500 may have stopped between the two writes: checked at the next start.
          if (res.statusCode < 500) this.#settle(id);
          return end.apply(res, args);
        };
      });
    });
  }

  /** The carried entries of `table` are mended (of all of them, when they were not known). */
  settleCarried(table) {
    this.carried = (this.carried ?? []).filter((e) => e.table !== table);
    this.#rotate();
  }

  close() {
    closeSync(this.#fd);
  }

  /** @param {string} operation @param {Buffer} body */
  #record(operation, body) {
    let entries;
    try {
      entries = entriesOf(operation, JSON.parse(body.toString()));
    } catch {
      return undefined; // dynalite refuses it without writing
    }
    if (entries.length === 0) return undefined;
    const id = this.#next++;
    const lines = entries.map((e) => `${JSON.stringify({ id, ...e })}\n`).join('');
    writeSync(this.#fd, lines);
    this.#open.set(id, lines);
    if (++this.#appended >= ROTATE_AFTER) this.#rotate();
    return id;
  }

  /** @param {number} id */
  #settle(id) {
    this.#open.delete(id);
    writeSync(this.#fd, `${JSON.stringify({ settled: id })}\n`);
  }

  #rotate() {
    closeSync(this.#fd);
    this.#fd = this.#rewrite();
  }

  /** The file with only what is unsettled, replaced whole (a crash leaves the old one or the new one). */
  #rewrite() {
    // Without an id: no line of this process settles them.
    const carried = this.carried ? this.carried.map((e) => `${JSON.stringify(e)}\n`) : [UNKNOWN];
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, [...carried, ...this.#open.values()].join(''));
    renameSync(tmp, this.path);
    this.#appended = 0;
    return openSync(this.path, 'a');
  }
}

/** @param {string} operation @param {any} data @returns {JournalEntry[]} */
function entriesOf(operation, data) {
  if (operation === 'BatchWriteItem')
    return Object.entries(data.RequestItems ?? {}).flatMap(([table, requests]) =>
      (Array.isArray(requests) ? requests : []).map((r) => ({
        table,
        key: r?.PutRequest ? keyOf(r.PutRequest.Item) : (r?.DeleteRequest?.Key ?? {}),
      })),
    );
  const key = operation === 'PutItem' ? keyOf(data.Item) : data.Key;
  return typeof data.TableName === 'string' && key ? [{ table: data.TableName, key }] : [];
}

/** @param {any} item */
function keyOf(item) {
  return Object.fromEntries(KEY_ATTRIBUTES.filter((a) => item?.[a]).map((a) => [a, item[a]]));
}

/**
 * The entries no line settles, each once, or undefined when any item may be torn. Whole lines
 * only: a line cut short by a kill was never followed by its request (or by its answer, when it
 * settles one, which is then checked again: harmless).
 * @returns {JournalEntry[] | undefined}
 */
function readEntries(path) {
  /** @type {{ id?: number; table: string; key: Record<string, unknown> }[]} */
  const written = [];
  const settled = new Set();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    let parsed;
    try {
      parsed = JSON.parse(line);
    } catch {
      continue;
    }
    if (parsed?.unknown === true) return undefined;
    if (typeof parsed?.settled === 'number') settled.add(parsed.settled);
    else if (typeof parsed?.table === 'string' && parsed.key) written.push(parsed);
  }
  const unsettled = written
    .filter((e) => e.id === undefined || !settled.has(e.id))
    .map(({ table, key }) => ({ table, key }));
  return [...new Map(unsettled.map((e) => [JSON.stringify(e), e])).values()];
}
