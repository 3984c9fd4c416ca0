import { Metrics } from '@aws-lambda-powertools/metrics';

/** Keeps the EMF documents a Metrics would print, instead of printing them. */
export class CapturedMetrics extends Metrics {
  readonly documents: ReturnType<Metrics['serializeMetrics']>[] = [];
  override publishStoredMetrics(): this {
    this.documents.push(this.serializeMetrics());
    this.clearMetrics();
    this.clearDimensions();
    this.clearMetadata();
    return this;
  }
}
