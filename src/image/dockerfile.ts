import { readFileSync } from 'node:fs';

/** What the Dockerfile's final stage says about the image, read so the other build cannot drift. */
export interface RuntimeStage {
  /** The base image of each stage, e.g. node:24-bookworm-slim. */
  bases: string[];
  /** Node's major version of the final stage's base (node:<major>-...). */
  nodeMajor: number;
  workdir: string;
  user: string;
  env: Record<string, string>;
  volumes: string[];
  exposedPorts: string[];
  entrypoint: string[];
  cmd: string[];
  /** What the final stage copies into its workdir, by name (package.json, node_modules, dist). */
  copied: string[];
}

/** Joins continuation lines and drops comments: one instruction per entry. */
function instructions(text: string): Array<{ keyword: string; args: string }> {
  const joined = text.replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const space = line.search(/\s/);
      return { keyword: line.slice(0, space).toUpperCase(), args: line.slice(space + 1).trim() };
    });
}

/** The exec form (`["a", "b"]`) as an array; the shell form is refused (the image has no shell use). */
function execForm(keyword: string, args: string): string[] {
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === 'string')) {
    throw new Error(`Dockerfile ${keyword}: only the exec form (a JSON array of strings) is supported`);
  }
  return parsed;
}

export function readRuntimeStage(path: string): RuntimeStage {
  const all = instructions(readFileSync(path, 'utf8'));
  const bases = all.filter((i) => i.keyword === 'FROM').map((i) => i.args.split(/\s+/)[0] as string);
  const lastFrom = all.map((i) => i.keyword).lastIndexOf('FROM');
  const stage = all.slice(lastFrom + 1);
  const base = bases.at(-1) ?? '';
  const major = /^node:(\d+)-/.exec(base)?.[1];
  if (!major) throw new Error(`Dockerfile: the final stage's base ${base} is not node:<major>-...`);
  const last = (keyword: string) => stage.filter((i) => i.keyword === keyword).at(-1)?.args;
  const env: Record<string, string> = {};
  for (const { args } of stage.filter((i) => i.keyword === 'ENV')) {
    const [name, ...value] = args.split('=');
    if (name) env[name] = value.join('=');
  }
  return {
    bases,
    nodeMajor: Number(major),
    workdir: last('WORKDIR') ?? '/',
    user: last('USER') ?? 'root',
    env,
    volumes: stage.filter((i) => i.keyword === 'VOLUME').flatMap((i) => execForm('VOLUME', i.args)),
    exposedPorts: stage.filter((i) => i.keyword === 'EXPOSE').flatMap((i) => i.args.split(/\s+/)),
    entrypoint: execForm('ENTRYPOINT', last('ENTRYPOINT') ?? '[]'),
    cmd: execForm('CMD', last('CMD') ?? '[]'),
    copied: stage
      .filter((i) => i.keyword === 'COPY')
      .map((i) => i.args.split(/\s+/).filter((word) => !word.startsWith('--')))
      .map((words) => (words[0] ?? '').replace(/\/$/, '').split('/').at(-1) as string),
  };
}
