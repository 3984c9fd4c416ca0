import { mapLimit } from '../core/async.js';
import type { TenantConfig } from '../core/config.js';
import { compareSequence } from '../core/ranges.js';
import type { ShardReader } from '../log/shard-reader.js';
import type { AdmissionLag, AdmissionLags } from '../store/admission-lags.js';
import type { RangeStore } from '../store/ranges.js';
import { toLogRecords } from './fast-admission.js';
import type { LogRecord, RangeAdmission } from './range-admission.js';

/**
 * The sweep's half of a lag on a shared stream (store/admission-lags.ts): a lagging queue's
 * records are read from the log after its shard's last range, as produce's fast admission reads
 * them, and admitted as its window makes room. The lag ends once a read went past where dispatch
 * stopped and admission took all the queue's records it read; a lag dispatch moved on meanwhile
 * stays for the next pass. Reading the others' records to find a queue's is what a lag costs:
 * up to four pages of Kinesis reads a pass, and only while the queue's window has room for what
 * they would find.
 */

export interface LagCatchUpDeps {
  tenant: TenantConfig;
  admission: RangeAdmission;
  lags: AdmissionLags;
  reader: ShardReader;
  ranges: RangeStore;
}

/** Records read from the shared stream per call, and calls per catch-up. */
const PAGE = 1000;
const PAGES = 4;
/**
 * A page is twice the window's room, at least this: a lagging queue's consumers free a few
 * entries a pass, and a page of a thousand records read for ten held up the shard's other
 * readers for nothing (locally, the emulator thread every queue's calls wait on).
 */
const MIN_PAGE = 100;
/** Lags caught up at once. */
const AT_ONCE = 4;

export class LagCatchUp {
  /** Only a queue of a shared stream can lag: a tenant without one reads nothing here. */
  private readonly shared: boolean;

  constructor(private readonly deps: LagCatchUpDeps) {
    this.shared = Object.values(deps.tenant.queues).some((q) => q.shared_stream);
  }

  /** Whether any queue lags: the sweep stays up until none does. */
  async any(): Promise<boolean> {
    return this.shared && (await this.deps.lags.all()).length > 0;
  }

  /** Catches every lag up as far as its window takes; answers how many ended. */
  async run(): Promise<number> {
    if (!this.shared) return 0;
    const lags = await this.deps.lags.all();
    const ended = await mapLimit(lags, AT_ONCE, (lag) => this.catchUp(lag));
    return ended.filter(Boolean).length;
  }

  private async catchUp(lag: AdmissionLag): Promise<boolean> {
    const config = this.deps.tenant.queues[lag.queue];
    // A queue taken out of the tenant file: nothing will ever admit it.
    if (!config) return this.deps.lags.end(lag);
    // A window still full would read the shard for nothing: its reads are the shard's five a
    // second, shared with dispatch and produce's fast admission.
    const room = await this.deps.admission.room(lag.queue, config, lag.shard);
    if (room <= 0) return false;
    let readTo: string | undefined;
    let atTip = false;
    let lastOwn: string | undefined;
    const limit = Math.min(PAGE, Math.max(MIN_PAGE, room * 2));
    const read = async (after: string | undefined): Promise<LogRecord[]> => {
      const own: LogRecord[] = [];
      const from = after === undefined ? 'oldest' : { after };
      for await (const page of this.deps.reader.pages(config.stream, lag.shard, from, limit, PAGES)) {
        readTo = page.records.at(-1)?.sequence ?? readTo;
        atTip = page.atTip;
        own.push(...toLogRecords(page.records, lag.queue, config));
        if (own.length >= Math.min(PAGE, room)) break;
      }
      lastOwn = own.at(-1)?.sequence;
      return own;
    };
    await this.deps.admission.catchUp(lag.queue, config, lag.shard, read, { waitForRoom: false });
    const readPast = atTip || (readTo !== undefined && compareSequence(readTo, lag.through) >= 0);
    if (!readPast) return false;
    if (lastOwn !== undefined) {
      const head = await this.deps.ranges.head(lag.queue, lag.shard);
      if (!head || compareSequence(head.last, lastOwn) < 0) return false;
    }
    return this.deps.lags.end(lag);
  }
}
