import type { ClientHttp2Session } from 'node:http2';

const BODY_LIMIT_BYTES = 64 * 1024;

/** The agent did not answer a request of the edge in time. */
export class AgentAnswerTimeout extends Error {}

export interface AgentAnswer {
  status: number;
  /** The answer's body as text ('' when empty). */
  text: string;
}

/** One request the edge sends to its agent, with an optional JSON body; resolves with the answer. */
export function requestAgent(
  h2: ClientHttp2Session,
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<AgentAnswer> {
  return new Promise((resolve, reject) => {
    let stream: ReturnType<ClientHttp2Session['request']>;
    try {
      stream = h2.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json' });
    } catch (error) {
      // The session is closing (the agent went away between two requests).
      reject(new Error(`${path} failed`, { cause: error }));
      return;
    }
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
    };
    const timer = setTimeout(() => {
      settle(() => reject(new AgentAnswerTimeout(`the agent did not answer ${path} within ${timeoutMs} ms`)));
      stream.close();
    }, timeoutMs);
    let status = 0;
    let text = '';
    stream.once('response', (headers) => {
      status = Number(headers[':status']);
    });
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > BODY_LIMIT_BYTES) stream.close();
    });
    stream.once('error', (error) => settle(() => reject(new Error(`${path} failed`, { cause: error }))));
    stream.once('end', () => settle(() => resolve({ status, text })));
    stream.once('close', () =>
      settle(() => reject(new Error(`${path}: the stream closed before the agent's answer ended`))),
    );
    stream.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** The answer's JSON body (null when empty). */
export function answerJson(path: string, answer: AgentAnswer): unknown {
  if (answer.text === '') return null;
  try {
    return JSON.parse(answer.text);
  } catch (error) {
    throw new Error(`${path}: the agent's answer is not JSON`, { cause: error });
  }
}
