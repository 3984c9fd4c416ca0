import { ArnFormat, CfnOutput, type CfnResource, Stack } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { acknowledgeNag } from './nag.js';

/**
 * The wake channel (docs/wake-channel.md): an API Gateway WebSocket API whose routes reach the api
 * function, and whose management endpoint every function that admits posts wakes to. Made before
 * the functions, which carry the endpoint in their environment; routed once the api function exists.
 */

const STAGE = 'live';
/** Frames a second over all connections: hellos, pings (one per 5 idle minutes) and bad frames. */
const THROTTLE = { rateLimit: 100, burstLimit: 200 };

export class WakeChannelApi extends Construct {
  readonly api: apigw.WebSocketApi;
  /** The stage's management endpoint (RuntimeConfig.channelEndpoint). */
  readonly endpoint: string;

  constructor(scope: Construct, id: string, props: { tenant: string }) {
    super(scope, id);
    this.api = new apigw.WebSocketApi(this, 'Api', { apiName: `leaseq-${props.tenant}-channel` });
    const stack = Stack.of(this);
    this.endpoint = `https://${this.api.apiId}.execute-api.${stack.region}.${stack.urlSuffix}/${STAGE}`;
  }

  /** Routes `$connect`, `$default` (answered on the connection) and `$disconnect` to the api function. */
  route(fn: lambda.IFunction): void {
    const integration = (id: string) => new WebSocketLambdaIntegration(id, fn);
    const routes = [
      this.api.addRoute('$connect', { integration: integration('ChannelConnect') }),
      this.api.addRoute('$default', { integration: integration('ChannelFrames'), returnResponse: true }),
      this.api.addRoute('$disconnect', { integration: integration('ChannelDisconnect') }),
    ];
    for (const route of routes)
      acknowledgeNag(route.node.findChild('Resource'), {
        id: 'AwsSolutions-APIG4',
        reason:
          'The api function authenticates $connect itself: the bearer API key of the upgrade ' +
          "request is looked up as every HTTP route's is (functions/api/channel.ts, 401 " +
          'otherwise). A connection hears only of the queues its receives registered for, and a ' +
          "receive checks the key's consume scope on its queue.",
      });
    const accessLogs = new logs.LogGroup(this, 'AccessLogs', { retention: logs.RetentionDays.ONE_MONTH });
    const stage = new apigw.WebSocketStage(this, 'Stage', {
      webSocketApi: this.api,
      stageName: STAGE,
      autoDeploy: true,
      throttle: THROTTLE,
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            connectionId: '$context.connectionId',
            eventType: '$context.eventType',
            routeKey: '$context.routeKey',
            status: '$context.status',
            time: '$context.requestTimeEpoch',
            ip: '$context.identity.sourceIp',
            error: '$context.error.message',
          }),
        ),
      },
    });
    new CfnOutput(Stack.of(this), 'ChannelUrl', { value: stage.url });
  }

  /** PostToConnection on this channel's connections, and nothing else of API Gateway. */
  grantWake(grantee: iam.IGrantable): void {
    const connections = `${STAGE}/POST/@connections/*`;
    const stack = Stack.of(this);
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['execute-api:ManageConnections'],
      resourceArns: [
        stack.formatArn({
          service: 'execute-api',
          resource: this.api.apiId,
          arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          resourceName: connections,
        }),
      ],
    });
    const principal = grantee.grantPrincipal;
    if (!(principal instanceof Construct)) return;
    const apiId = stack.getLogicalId(this.api.node.defaultChild as CfnResource);
    acknowledgeNag(principal.node.tryFindChild('DefaultPolicy') ?? principal, {
      id: 'AwsSolutions-IAM5',
      reason:
        'A wake is posted to the connection a receive names at run time (API Gateway makes the ' +
        "ids as clients connect): the wildcard is that connection's id, under this stack's own " +
        'channel API, its one stage and POST, the only method of PostToConnection.',
      appliesTo: [
        `Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<${apiId}>/${connections}`,
      ],
    });
  }
}
