import { request } from 'node:https';

/**
 * Run in a process with test/bundles/aws-at-moto.ts preloaded, after the resources are made: gives
 * the functions a role's temporary credentials from moto's STS, as Lambda gives a function its
 * execution role's, then turns on moto's request authentication (its `reset-auth`): from then on
 * moto checks every request's SigV4 signature and session token as AWS does, and refuses the rest.
 *
 * The role may do anything: moto's evaluation of IAM policies is partial, so the stack's own
 * grants (infra/leaseq-tenant.ts) are the template tests', not this.
 */

export interface RoleCredentials {
  AWS_ACCESS_KEY_ID: string;
  AWS_SECRET_ACCESS_KEY: string;
  AWS_SESSION_TOKEN: string;
}

function post(url: string, body: string, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        res.on('end', () =>
          res.statusCode === 200 ? resolve(text) : reject(new Error(`${url}: ${res.statusCode} ${text}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * An action of a Query-protocol service (IAM, STS), not signed: moto takes any request until its
 * auth is on. The Authorization header only names the service: moto's server picks the service of
 * a request by its credential scope first (without one, `iam.amazonaws.com` went to S3).
 */
const query = (url: string, service: string, params: Record<string, string>) =>
  post(url, new URLSearchParams(params).toString(), {
    authorization: `AWS4-HMAC-SHA256 Credential=AKIAPROVISIONING/20260101/us-east-1/${service}/aws4_request, SignedHeaders=host, Signature=0`,
  });

const field = (xml: string, name: string): string => {
  const value = new RegExp(`<${name}>([^<]+)</${name}>`).exec(xml)?.[1];
  if (!value) throw new Error(`no ${name} in ${xml}`);
  return value;
};

export async function assumeFunctionRole(region: string): Promise<RoleCredentials> {
  const iam = 'https://iam.amazonaws.com/';
  const role = 'leaseq-bundles-function';
  const made = await query(iam, 'iam', {
    Action: 'CreateRole',
    Version: '2010-05-08',
    RoleName: role,
    AssumeRolePolicyDocument: JSON.stringify({
      Version: '2012-10-17',
      Statement: [
        { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
      ],
    }),
  });
  await query(iam, 'iam', {
    Action: 'PutRolePolicy',
    Version: '2010-05-08',
    RoleName: role,
    PolicyName: 'everything',
    PolicyDocument: JSON.stringify({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
    }),
  });
  const assumed = await query(`https://sts.${region}.amazonaws.com/`, 'sts', {
    Action: 'AssumeRole',
    Version: '2011-06-15',
    RoleArn: field(made, 'Arn'),
    RoleSessionName: 'leaseq-bundles',
  });
  await motoAuthenticates(region, true);
  return {
    AWS_ACCESS_KEY_ID: field(assumed, 'AccessKeyId'),
    AWS_SECRET_ACCESS_KEY: field(assumed, 'SecretAccessKey'),
    AWS_SESSION_TOKEN: field(assumed, 'SessionToken'),
  };
}

/**
 * Turns moto's request authentication on (every request from then on; count 0 means none goes
 * without) or off (no count: every request goes without).
 */
export async function motoAuthenticates(region: string, on: boolean): Promise<void> {
  // As text: werkzeug reads a form-encoded body into the form, and moto then finds no count.
  await post(`https://sts.${region}.amazonaws.com/moto-api/reset-auth`, on ? '0' : 'inf', {
    'content-type': 'text/plain',
  });
}
