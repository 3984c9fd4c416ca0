import { beforeAll, describe, expect, it } from 'vitest';
import {
  alarmMetrics,
  benchTenantFile,
  type DeployedTenant,
  deployedTenant,
  synthTemplate,
  type Template,
} from '../../bench/deployed-stack.js';
import { DEPLOYMENT, PRICES } from '../../bench/prices.js';

// The bench's idle bill read from the tenant stack as `cdk synth` makes it (inline function code: no esbuild).
const streams = (t: Template) => Object.values(t.Resources).filter((r) => r.Type === 'AWS::Kinesis::Stream');
const line = (d: DeployedTenant, item: string) => d.items.find((i) => i.item === item);

let one: { template: Template; deployed: DeployedTenant };
let ten: { template: Template; deployed: DeployedTenant };

beforeAll(async () => {
  const priced = async (queues: number) => {
    const file = benchTenantFile(queues);
    const template = synthTemplate(file);
    return { template, deployed: await deployedTenant(file, template) };
  };
  one = await priced(1);
  ten = await priced(10);
});

describe('the deployed stack, priced idle', () => {
  it("prices a one-queue tenant's one stream of one shard at shards × 730 h × the shard-hour", () => {
    expect(streams(one.template)).toHaveLength(1);
    expect(streams(one.template)[0]?.Properties?.ShardCount).toBe(1);
    const shards = line(one.deployed, 'Kinesis shard-hours');
    expect(shards?.count).toBe(1);
    expect(DEPLOYMENT.hoursPerMonth).toBe(730);
    expect(PRICES.kinesisShardHour.usd).toBe(0.015);
    expect(shards?.usdPerMonth).toBeCloseTo(1 * 730 * 0.015, 10);
  });

  it('gives ten default queues one stream still: they share it', () => {
    expect(ten.deployed.queues).toBe(10);
    expect(streams(ten.template)).toHaveLength(1);
    expect(line(ten.deployed, 'Kinesis shard-hours')?.count).toBe(1);
  });

  it("bills a stream on enhanced fan-out each of its shards' consumer-shard-hours, beside the shards", async () => {
    const file = {
      tenant: 'bench-fan',
      streams: { fast: { shards: 2, fan_out: true } },
      queues: { work: { owner: 'bench-team', stream: 'fast' } },
      alarms: { page: ['oncall@example.com'] },
    };
    const deployed = await deployedTenant(file, synthTemplate(file));
    const fanOut = line(deployed, 'Kinesis enhanced fan-out');
    expect(fanOut?.count).toBe(2);
    expect(fanOut?.usdPerMonth).toBeCloseTo(2 * 730 * PRICES.kinesisFanOutConsumerShardHour.usd, 10);
    expect(line(deployed, 'Kinesis shard-hours')?.count).toBe(2);
    expect(line(one.deployed, 'Kinesis enhanced fan-out')).toBeUndefined();
    expect(deployed.unclassified).toEqual([]);
  });

  it('knows every resource type in the template, as billed or free idle', () => {
    expect(one.deployed.unclassified).toEqual([]);
    expect(ten.deployed.unclassified).toEqual([]);
  });
});

describe('alarm metrics', () => {
  const stat = (id: string, period = 60) => ({ Id: id, MetricStat: { Period: period }, ReturnData: false });
  it('bills a single-metric alarm one metric, high resolution under a minute', () => {
    expect(alarmMetrics({ Type: 'AWS::CloudWatch::Alarm', Properties: { Period: 300 } })).toEqual({
      metrics: 1,
      highResolution: false,
    });
    expect(alarmMetrics({ Type: 'AWS::CloudWatch::Alarm', Properties: { Period: 10 } }).highResolution).toBe(
      true,
    );
  });
  it('bills metric math by its MetricStats, anomaly detection three', () => {
    const math = { Metrics: [{ Id: 'e', Expression: 'a / b' }, stat('a'), stat('b')] };
    expect(alarmMetrics({ Type: 'AWS::CloudWatch::Alarm', Properties: math }).metrics).toBe(2);
    const band = { Metrics: [{ Id: 'e', Expression: 'ANOMALY_DETECTION_BAND(m0, 3)' }, stat('m0', 300)] };
    expect(alarmMetrics({ Type: 'AWS::CloudWatch::Alarm', Properties: band }).metrics).toBe(3);
  });
});
