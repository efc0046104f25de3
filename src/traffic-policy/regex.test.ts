import { describe, expect, it } from 'vitest';
import { compilePattern, replacementProblem } from './regex.js';

const regex = (source: string): RegExp => {
  const compiled = compilePattern(source);
  if ('problem' in compiled) throw new Error(compiled.problem);
  return compiled.regex;
};

describe('replacementProblem', () => {
  it('accepts references to groups the pattern has, and the special forms', () => {
    expect(replacementProblem('/$1/$2', regex('^/(a)/(b)'))).toBeUndefined();
    expect(replacementProblem('/$<name>', regex('^/(?<name>.*)'))).toBeUndefined();
    expect(replacementProblem("$$1 $& $` $'", regex('x'))).toBeUndefined();
    expect(replacementProblem('https://example.com/', undefined)).toBeUndefined();
  });

  it('refuses references the pattern cannot fill', () => {
    expect(replacementProblem('$1', regex('x'))).toBe("refers to $1, but 'from' has 0 capture groups");
    expect(replacementProblem('$3', regex('(a)(b)'))).toBe("refers to $3, but 'from' has 2 capture groups");
    expect(replacementProblem('$0', regex('(a)'))).toMatch(/^refers to \$0, which is no capture group/);
    expect(replacementProblem('$<x>', regex('(?<y>a)'))).toBe(
      "refers to $<x>, but 'from' has no group named 'x'",
    );
    expect(replacementProblem('$1', undefined)).toBe(
      "refers to $1, but there is no 'from' pattern to capture it",
    );
  });

  it('counts groups that an alternative leaves out', () => {
    expect(replacementProblem('$2', regex('(a)|(b)'))).toBeUndefined();
  });
});

describe('compilePattern', () => {
  it('says why a pattern does not compile', () => {
    expect(compilePattern('(')).toMatchObject({
      problem: expect.stringMatching(/^is not a valid regular expression: /),
    });
  });
});
