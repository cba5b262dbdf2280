/**
 * One JSON request over http or https with everything bounded: a timeout, the answer's size, an
 * abort signal. Both sides of the agent protocol use it: the conductor asking an agent
 * (`agent-client.ts`) and the agent asking the API (`agent-api-client.ts`).
 */
import http from 'node:http';
import https from 'node:https';

export interface JsonRequest {
  method: 'GET' | 'POST';
  url: URL;
  /** Sent as JSON when given. */
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs: number;
  /** The answer is refused (the request fails) beyond this many bytes. */
  maxBytes: number;
  signal?: AbortSignal;
  /** Extra CA certificates (PEM) for https. */
  ca?: string | Buffer;
}

export interface JsonAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body as text. */
  text: string;
  /** The body parsed, null when empty, undefined when it is not JSON. */
  json: unknown;
}

/** Thrown when the answer is larger than `maxBytes`. */
export class AnswerTooLarge extends Error {}

export function requestJson(request: JsonRequest): Promise<JsonAnswer> {
  const { url } = request;
  const payload = request.body === undefined ? undefined : Buffer.from(JSON.stringify(request.body));
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(url, {
      method: request.method,
      timeout: request.timeoutMs,
      headers: { accept: 'application/json', ...request.headers, ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}) },
      ...(request.signal ? { signal: request.signal } : {}),
      ...(url.protocol === 'https:' && request.ca ? { ca: request.ca } : {}),
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error(`no answer within ${request.timeoutMs / 1000} s`), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > request.maxBytes) {
          res.destroy();
          reject(new AnswerTooLarge(`the answer of ${url.host} is larger than ${request.maxBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text === '' ? null : JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.end(payload);
  });
}
