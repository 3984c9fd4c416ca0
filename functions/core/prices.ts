/**
 * The list prices leaseq itself quotes (the usage answer's cost, GET /usage), and the one place
 * they are kept: bench/prices.ts re-uses these records beside the bench's own. us-east-1, on
 * demand, without free tiers or volume discounts. `check` says how each figure was checked:
 * `search` = confirmed against a stored copy of a page quoting it (`checkedAgainst`); `memory` = a
 * well-known list price, with the date it last changed as far as we know.
 */

export type PriceCheck = 'search' | 'memory';

export interface Price {
  usd: number;
  per: string;
  source: string;
  check: PriceCheck;
  checkedAgainst?: string;
  /** The price's last known change. */
  since: string;
}

export const PRICES_AS_OF = '2026-11-29';
export const REGION = 'us-east-1';

/** A month as AWS bills hours: GB-hours become GB-months with it. */
export const HOURS_PER_MONTH = 730;

export const USAGE_PRICES = {
  apiGatewayHttpRequest: {
    usd: 1.0 / 1e6,
    per: 'HTTP API request (first 300 M a month; metered in 512 KB increments)',
    source: 'https://aws.amazon.com/api-gateway/pricing/',
    check: 'search',
    checkedAgainst: 'awsforengineers.com/blog/aws-api-gateway-pricing-explained (2025-05)',
    since: '2020-03 (HTTP APIs generally available)',
  },
  lambdaRequest: {
    usd: 0.2 / 1e6,
    per: 'Lambda invocation',
    source: 'https://aws.amazon.com/lambda/pricing/',
    check: 'search',
    checkedAgainst: 'cloudchipr.com/blog/aws-lambda-pricing; kodekloud Lambda pricing notes',
    since: '2014-11',
  },
  dynamodbStorageGbMonth: {
    usd: 0.25,
    per: 'GB-month stored (Standard table class; the first 25 GB a month are free)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    check: 'memory',
    since: '2012 (unchanged since launch)',
  },
} as const satisfies Record<string, Price>;
