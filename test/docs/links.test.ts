import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The Markdown documents as a reader meets them on GitHub: every relative link leads to a file that
 * exists and, with `#anchor`, to a heading that exists (GitHub's slugs); external http(s) links are
 * not fetched. The documents also keep to what the product is: no references to the history of
 * their own development, and no names of commercial tunnel services.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Named documents, plus every Markdown file under these folders. */
const NAMED = ['README.md', 'CHANGELOG.md', 'SECURITY.md', 'src/ARCHITECTURE.md', 'bench/README.md'];
const WALKED = ['docs', 'src', 'bench', 'charts', 'config'];

function markdownUnder(folder: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  if (existsSync(join(ROOT, folder))) walk(folder);
  return found;
}

const DOCUMENTS = [...new Set([...NAMED, ...WALKED.flatMap(markdownUnder)])].sort();

interface Line {
  number: number;
  text: string;
  /** Inside a fenced code block: no links or headings there. */
  code: boolean;
}

function linesOf(text: string): Line[] {
  let fence: string | undefined;
  return text.split('\n').map((raw, index) => {
    const opener = /^\s{0,3}(`{3,}|~{3,})/.exec(raw)?.[1];
    if (fence === undefined && opener) {
      fence = opener;
      return { number: index + 1, text: raw, code: true };
    }
    if (fence !== undefined) {
      if (opener?.startsWith(fence) && raw.trim() === opener) fence = undefined;
      return { number: index + 1, text: raw, code: true };
    }
    return { number: index + 1, text: raw, code: false };
  });
}

/** A heading's anchor as GitHub makes it: the text lowercased, punctuation dropped, spaces to `-`. */
function githubSlug(heading: string): string {
  return heading
    .replace(/<[^>]*>/g, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor of a document: its headings' slugs (repeats get -1, -2, …) and explicit ids. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of linesOf(text)) {
    if (line.code) continue;
    for (const match of line.text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(match[1] as string);
    const heading = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line.text)?.[1];
    if (heading === undefined) continue;
    const slug = githubSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

interface Link {
  line: number;
  target: string;
}

/** Inline links and images `[text](target "title")` and reference definitions `[label]: target`. */
function linksOf(text: string): Link[] {
  const links: Link[] = [];
  for (const line of linesOf(text)) {
    if (line.code) continue;
    // Code spans are text, not links.
    const prose = line.text.replace(/(`+)[\s\S]*?\1/g, '');
    for (const match of prose.matchAll(
      /!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g,
    )) {
      links.push({ line: line.number, target: match[1] as string });
    }
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(prose);
    if (definition) links.push({ line: line.number, target: definition[1] as string });
  }
  return links;
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOfFile(path: string): Set<string> {
  let anchors = anchorCache.get(path);
  if (!anchors) {
    anchors = anchorsOf(readFileSync(path, 'utf8'));
    anchorCache.set(path, anchors);
  }
  return anchors;
}

/** Why a link of `document` is dead, or undefined when it leads somewhere. */
function deadLink(document: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // http(s), mailto: not checked here
  const hash = target.indexOf('#');
  const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const from = join(ROOT, document);
  const file =
    pathPart === ''
      ? from
      : pathPart.startsWith('/')
        ? join(ROOT, pathPart)
        : resolve(dirname(from), pathPart);
  if (!file.startsWith(ROOT)) return `${pathPart} is outside the repository`;
  if (!existsSync(file)) return `${relative(ROOT, file).split(sep).join('/')} does not exist`;
  if (anchor === undefined || anchor === '') return undefined;
  if (statSync(file).isDirectory()) return `#${anchor} on a directory`;
  if (!file.endsWith('.md')) return undefined; // line anchors of source files (#L10) are GitHub's
  if (!anchorsOfFile(file).has(anchor)) {
    return `${relative(ROOT, file).split(sep).join('/')} has no heading for #${anchor}`;
  }
  return undefined;
}

/** Words that tell the story of the project's own making instead of what the product is. */
const HISTORY: RegExp[] = [
  /\bissues? #?\d+/i,
  /\bstops? \d+\b/i,
  /\b(?:this|the previous|the last|the next|that) stop\b/i,
  /\bthe last round\b/i,
  /\bthe API this one follows\b/i,
  new RegExp(['\\(', 'was '].join(''), 'i'),
  /\bbefore\/now\b/i,
];

/** Commercial tunnel services, spelled in pieces so that this file never names them either. */
const SERVICES = [
  ['ng', 'rok'],
  ['cloud', 'flare'],
  ['tail', 'scale'],
  ['page', 'kite'],
].map((parts) => parts.join(''));

describe('documents', () => {
  it('are all there', () => {
    expect(DOCUMENTS.filter((document) => !existsSync(join(ROOT, document)))).toEqual([]);
    expect(DOCUMENTS).toEqual(expect.arrayContaining(['docs/api.md', 'docs/operating.md']));
  });

  it('have no dead relative links or anchors', () => {
    const dead: string[] = [];
    for (const document of DOCUMENTS) {
      for (const link of linksOf(readFileSync(join(ROOT, document), 'utf8'))) {
        const why = deadLink(document, link.target);
        if (why) dead.push(`${document}:${link.line}: (${link.target}) ${why}`);
      }
    }
    expect(dead).toEqual([]);
  });

  it('do not refer to the history of their own development', () => {
    const found: string[] = [];
    for (const document of DOCUMENTS) {
      for (const line of linesOf(readFileSync(join(ROOT, document), 'utf8'))) {
        const pattern = HISTORY.find((candidate) => candidate.test(line.text));
        if (pattern) found.push(`${document}:${line.number}: ${line.text.trim()}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('name no commercial tunnel service', () => {
    const found: string[] = [];
    for (const document of DOCUMENTS) {
      for (const line of linesOf(readFileSync(join(ROOT, document), 'utf8'))) {
        const lower = line.text.toLowerCase();
        const service = SERVICES.find((name) => lower.includes(name));
        if (service) found.push(`${document}:${line.number}: ${service}`);
      }
    }
    expect(found).toEqual([]);
  });
});

describe('the link checker', () => {
  it("makes GitHub's anchors", () => {
    expect(githubSlug('The data plane: edges and agents')).toBe('the-data-plane-edges-and-agents');
    expect(githubSlug('`edgeward agent`')).toBe('edgeward-agent');
    expect(githubSlug('Getting `edgeward`')).toBe('getting-edgeward');
    expect(githubSlug('Accounts, keys and owners')).toBe('accounts-keys-and-owners');
    expect(githubSlug('Order, retries, batches')).toBe('order-retries-batches');
    expect(githubSlug('The finalizer at create (Kubernetes 1.36+)')).toBe(
      'the-finalizer-at-create-kubernetes-136',
    );
    expect(githubSlug('snake_case and [a link](x.md)')).toBe('snake_case-and-a-link');
    expect([...anchorsOf('# A\n## A\n```\n# not a heading\n```\n### A\n')]).toEqual(['a', 'a-1', 'a-2']);
  });

  it('finds links outside code, and dead ones', () => {
    const text =
      'See [api](docs/api.md#reaching-it) and `[not](a-link.md)`.\n```\n[nor](this.md)\n```\n[ref]: docs/nothing.md\n';
    expect(linksOf(text)).toEqual([
      { line: 1, target: 'docs/api.md#reaching-it' },
      { line: 5, target: 'docs/nothing.md' },
    ]);
    expect(deadLink('README.md', 'docs/api.md#reaching-it')).toBeUndefined();
    expect(deadLink('README.md', 'docs/api.md#no-such-heading')).toMatch(/no heading/);
    expect(deadLink('README.md', 'docs/nothing.md')).toMatch(/does not exist/);
    expect(deadLink('README.md', 'https://example.com/x')).toBeUndefined();
  });
});
