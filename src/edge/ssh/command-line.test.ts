import { describe, expect, it } from 'vitest';
import { formatLabels, parseCommandLine, splitWords, usage } from './command-line.js';

describe('splitWords: the remote command line split like a POSIX shell', () => {
  it('splits on runs of whitespace', () => {
    expect(splitWords('  tunnel \t --label  a=b\n')).toEqual(['tunnel', '--label', 'a=b']);
    expect(splitWords('')).toEqual([]);
  });

  it('keeps quoted text together, literally inside single quotes', () => {
    expect(splitWords(`-m 'two "words" \\n'`)).toEqual(['-m', 'two "words" \\n']);
    expect(splitWords(`-m "say \\"hi\\" \\\\ \\n"`)).toEqual(['-m', 'say "hi" \\ \\n']);
    expect(splitWords(`a'b c'"d e"f`)).toEqual(['ab cd ef']);
    expect(splitWords(`'' ""`)).toEqual(['', '']);
  });

  it('a backslash outside quotes escapes the next character', () => {
    expect(splitWords("two\\ words \\'x")).toEqual(['two words', "'x"]);
  });

  it('refuses an unterminated quote', () => {
    expect(() => splitWords("-m 'open")).toThrow('unterminated single quote');
    expect(() => splitWords('-m "open')).toThrow('unterminated double quote');
  });
});

describe('parseCommandLine', () => {
  it('tunnel with labels in every spelling and metadata', () => {
    expect(
      parseCommandLine(`tunnel --label edge=web -l team=a --label=tier=x=y -m "'built from main'"`),
    ).toEqual({
      kind: 'tunnel',
      labels: { edge: 'web', team: 'a', tier: 'x=y' },
      metadata: "'built from main'",
    });
    expect(parseCommandLine('tunnel --label app= --metadata=hello')).toEqual({
      kind: 'tunnel',
      labels: { app: '' },
      metadata: 'hello',
    });
    expect(parseCommandLine('tunnel -l edgeward.dev/region=eu')).toEqual({
      kind: 'tunnel',
      labels: { 'edgeward.dev/region': 'eu' },
      metadata: undefined,
    });
  });

  it('help in its spellings', () => {
    for (const line of ['help', '--help', '-h', 'tunnel --help', 'tunnel -l a=b -h']) {
      expect(parseCommandLine(line), line).toEqual({ kind: 'help' });
    }
  });

  it.each([
    ['', 'no command given'],
    ['tunel --label a=b', "unknown command 'tunel': the commands are tunnel and help"],
    ['tunnel', 'tunnel needs at least one --label KEY=VALUE'],
    ['tunnel --label', '--label needs a value'],
    ['tunnel --label ab', "label 'ab' is not KEY=VALUE"],
    ['tunnel --label =b', "label name '' must be 1 to 63 characters"],
    ['tunnel --label a:b=c', "label name 'a:b' must be 1 to 63 characters"],
    [`tunnel --label ${'n'.repeat(64)}=v`, 'must be 1 to 63 characters'],
    [`tunnel --label n=${'v'.repeat(256)}`, 'the value of label n is longer than 255 bytes'],
    ['tunnel -l a=1 -l a=2', 'label a is given twice'],
    ['tunnel -l a=1 -m x -m y', '--metadata is given twice'],
    [`tunnel -l a=1 -m ${'x'.repeat(4097)}`, '--metadata is longer than 4096 bytes'],
    ['tunnel -l a=1 --verbose', "unknown option '--verbose' of tunnel"],
    ['tunnel a=1', "unexpected argument 'a=1': labels are given as --label KEY=VALUE"],
    ["tunnel -l 'a=1", 'cannot read the command line: unterminated single quote'],
    [`tunnel ${Array.from({ length: 65 }, (_, i) => `-l k${i}=v`).join(' ')}`, 'at most 64 labels'],
  ])('%j is refused: %s', (line, message) => {
    const command = parseCommandLine(line);
    expect(command.kind).toBe('invalid');
    expect(command.kind === 'invalid' && command.message).toContain(message);
  });

  it('refuses a command line longer than 64 KiB before splitting it', () => {
    const command = parseCommandLine(`tunnel -l a=1 -m '${'x'.repeat(64 * 1024)}'`);
    expect(command).toEqual({ kind: 'invalid', message: 'the command line is longer than 65536 bytes' });
  });
});

describe('texts', () => {
  it('the usage names both commands, the options and the exit statuses', () => {
    const text = usage();
    expect(text).toContain('-R 0:HOST:PORT EDGE-HOST tunnel --label KEY=VALUE');
    expect(text).toContain('EDGE-HOST help');
    expect(text).toContain('--metadata TEXT, -m TEXT');
    expect(text).toContain('Exit status: 0 after help, 1 when the edge refuses the session, 2 for');
  });

  it('formatLabels lists name=value pairs in order', () => {
    expect(formatLabels({ edge: 'web', team: 'a' })).toBe('edge=web, team=a');
  });
});
