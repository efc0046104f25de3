import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetch } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { projectStore } from '../support/server.js';
import { type ServerProcess, spawnServer } from '../support/server-process.js';

function hasStrace(): boolean {
  try {
    execFileSync('strace', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

beforeEach((context) => {
  context.skip(projectStore() === 'postgres', 'the write-ahead log fsync is SQLite’s');
  // CI installs strace (.ci/run): there a missing one fails instead of skipping.
  if (!process.env.CI) context.skip(!hasStrace(), 'strace is not installed');
});

let server: ServerProcess | undefined;
let dir: string | undefined;
afterEach(async () => {
  // The server is strace's child: kill it, and strace ends with it.
  if (server?.child.pid !== undefined && server.child.exitCode === null) {
    const children = readFileSync(`/proc/${server.child.pid}/task/${server.child.pid}/children`, 'utf8');
    for (const pid of children.trim().split(/\s+/).filter(Boolean)) process.kill(Number(pid), 'SIGKILL');
    await once(server.child, 'exit');
  }
  server = undefined;
  if (dir && !process.env.KEEP_TRACE) rmSync(dir, { recursive: true, force: true });
});

interface Call {
  thread: number;
  at: number;
  name: string;
  /** The descriptor's path as `strace -y` prints it. */
  target: string;
  text: string;
}

/** `strace -f -tt -y` lines; an `<unfinished ...>` call counts from its start, finished at its resume. */
function parseTrace(trace: string): (Call & { finishedAt: number })[] {
  const clock = (time: string) => {
    const [h, m, s] = time.split(':').map(Number) as [number, number, number];
    return (h * 3600 + m * 60 + s) * 1000;
  };
  const calls: (Call & { finishedAt: number })[] = [];
  const open = new Map<string, Call & { finishedAt: number }>();
  for (const line of trace.split('\n')) {
    const resumed = /^(\d+) +([\d:.]+) <\.\.\. (\w+) resumed>/.exec(line);
    if (resumed) {
      const call = open.get(`${resumed[1]}:${resumed[3]}`);
      if (call) call.finishedAt = clock(resumed[2] as string);
      continue;
    }
    const started = /^(\d+) +([\d:.]+) (\w+)\(\d+<([^>]*)>(.*)$/.exec(line);
    if (!started) continue;
    const [, thread, time, name, target, text] = started as unknown as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const call = { thread: Number(thread), at: clock(time), name, target, text, finishedAt: clock(time) };
    calls.push(call);
    if (text.includes('<unfinished ...>')) open.set(`${thread}:${name}`, call);
  }
  return calls;
}

describe('a durable create on SQLite, as the system calls show it', { timeout: 120_000 }, () => {
  it('is answered only after its log is fsynced, and that fsync runs off the event loop', async () => {
    if (!hasStrace()) throw new Error('strace is required in CI (.ci/run installs it)');
    dir = mkdtempSync(join(tmpdir(), 'edgeward-durable-'));
    const tracePath = join(dir, 'trace.txt');
    const key = `ewk_durable_${'0'.repeat(32)}`;
    server = await spawnServer(
      ['--data-dir', join(dir, 'data'), '--no-event-delivery'],
      { EDGEWARD_ADMIN_API_KEY: key },
      undefined,
      [
        'strace',
        '-f',
        '-tt',
        '-y',
        '-s',
        '24',
        '-e',
        'trace=pwrite64,fsync,fdatasync,write,writev',
        '-o',
        tracePath,
      ],
    );
    const created: string[] = [];
    // One at a time, so each answer follows its own commit.
    for (let i = 0; i < 8; i++) {
      const response = await fetch(`${server.listenUrl}/ip_policies`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'svc-version': '2', 'content-type': 'application/json' },
        body: JSON.stringify({ description: `durable ${i}` }),
      });
      expect(response.status).toBe(201);
      created.push(((await response.json()) as { id: string }).id);
    }

    const calls = parseTrace(readFileSync(tracePath, 'utf8'));
    const isLog = (call: Call) => call.target.endsWith('edgeward.sqlite-wal');
    const answers = calls.filter(
      (call) => call.target.startsWith('socket:') && call.text.includes('HTTP/1.1 201'),
    );
    expect(answers).toHaveLength(created.length);
    const eventLoop = answers[0]?.thread;
    for (const answer of answers) {
      const lastLogWrite = calls
        .filter((call) => isLog(call) && call.name === 'pwrite64' && call.at <= answer.at)
        .at(-1);
      expect(lastLogWrite, 'the commit wrote the log').toBeDefined();
      const flushed = calls.find(
        (call) =>
          isLog(call) &&
          call.name === 'fsync' &&
          call.at >= (lastLogWrite?.at ?? 0) &&
          call.finishedAt <= answer.at,
      );
      expect(flushed, 'an fsync of the log between the commit and the answer').toBeDefined();
      expect(flushed?.thread, 'the fsync ran on the thread pool').not.toBe(eventLoop);
    }
    // The event loop itself never waited for the disk on these commits.
    const fsyncsOnLoop = calls.filter(
      (call) =>
        call.thread === eventLoop && (call.name === 'fsync' || call.name === 'fdatasync') && isLog(call),
    );
    expect(fsyncsOnLoop.filter((call) => call.at >= (answers[0]?.at ?? 0))).toEqual([]);
  });
});
