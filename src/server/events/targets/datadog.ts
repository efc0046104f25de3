import { hostname } from 'node:os';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { request } from 'undici';
import type { StoredEventTarget } from '../../../schemas/event-target-forms.js';
import {
  BatchTooLargeError,
  byteLength,
  type DeliveryTarget,
  type OutboundRecord,
  type RecordResult,
  type TargetEndpoints,
} from './delivery-target.js';

type DatadogTarget = NonNullable<StoredEventTarget['datadog']>;

const gzipAsync = promisify(gzip);

/** `https://http-intake.logs.<site>`, as Datadog documents the logs intake of each site. */
export function datadogIntakeUrl(site: string, override?: string): string {
  return (override ?? `https://http-intake.logs.${site || 'datadoghq.com'}`).replace(/\/+$/, '');
}

/**
 * Datadog logs, through the HTTP intake v2 (`POST /api/v2/logs`, `DD-API-KEY`, gzip): up to 1,000
 * logs and 5 MB (uncompressed) a call, 1 MB a log. Each log's `message` is the envelope, which
 * Datadog parses as JSON attributes; `ddsource` is `edgeward`, `service` and `ddtags` as given.
 */
export function datadogTarget(target: DatadogTarget, endpoints: TargetEndpoints): DeliveryTarget {
  const url = `${datadogIntakeUrl(target.ddsite, endpoints.datadogUrl)}/api/v2/logs`;
  const host = hostname();
  const logOf = (record: OutboundRecord) => ({
    ddsource: 'edgeward',
    ...(target.ddtags ? { ddtags: target.ddtags } : {}),
    hostname: host,
    service: target.service || 'edgeward',
    message: record.body,
  });
  return {
    kind: 'datadog',
    limits: { maxRecords: 1000, maxRecordBytes: 1_000_000, maxBatchBytes: 5_000_000 },
    // The log as serialized in the payload (the envelope escaped inside `message`), and its comma.
    recordBytes: (record) => byteLength(JSON.stringify(logOf(record))) + 1,
    async send(records: OutboundRecord[], signal: AbortSignal): Promise<RecordResult[]> {
      const body = await gzipAsync(Buffer.from(JSON.stringify(records.map(logOf)), 'utf8'));
      const response = await request(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-encoding': 'gzip',
          'dd-api-key': target.api_key,
          'user-agent': 'edgeward-event-dispatcher',
        },
        body,
        signal,
        headersTimeout: endpoints.requestTimeoutMs,
        bodyTimeout: endpoints.requestTimeoutMs,
        ...(endpoints.datadogDispatcher ? { dispatcher: endpoints.datadogDispatcher } : {}),
      });
      const text = (await response.body.text()).slice(0, 300);
      if (response.statusCode >= 200 && response.statusCode < 300)
        return records.map(() => ({ accepted: true }));
      const failure = `Datadog answered ${response.statusCode}${text ? `: ${text}` : ''}`;
      if (response.statusCode === 413) throw new BatchTooLargeError(failure);
      // 400: Datadog refuses the payload itself; only a single log can be blamed for that.
      if (response.statusCode === 400 && records.length === 1)
        return [{ accepted: false, permanent: true, error: failure }];
      // 403 (the API key), 408, 429, 5xx, a 400 of several logs: worth another try later.
      throw new Error(failure);
    },
    close: () => {},
  };
}
