import { describe, expect, it } from 'vitest';
import { argLabel, argRows } from './step';

describe('argRows', () => {
  it('shows each argument as a labelled row, long or multi-line values as blocks', () => {
    expect(argRows({ path: 'src/a.ts', content: 'line one\nline two', description: 'Write the file' })).toEqual([
      { label: 'Path', value: 'src/a.ts', block: false, mono: true },
      { label: 'Content', value: 'line one\nline two', block: true, mono: true },
      { label: 'Description', value: 'Write the file', block: false, mono: false },
    ]);
  });

  it('skips empty arguments and writes numbers, flags and lists compactly', () => {
    expect(argRows({ command: 'npm test', timeoutMs: 5000, force: false, cwd: '', tags: ['a', 'b'] })).toEqual([
      { label: 'Command', value: 'npm test', block: false, mono: true },
      { label: 'Timeout ms', value: '5000', block: false, mono: true },
      { label: 'Force', value: 'false', block: false, mono: true },
      { label: 'Tags', value: '[\n  "a",\n  "b"\n]', block: true, mono: true },
    ]);
  });

  it('has nothing for no arguments', () => {
    expect(argRows(null)).toEqual([]);
    expect(argRows({})).toEqual([]);
    expect(argRows('')).toEqual([]);
  });
});

describe('argLabel', () => {
  it('puts keys into words', () => {
    expect(argLabel('old_string')).toBe('Old text');
    expect(argLabel('maxBytes')).toBe('Max bytes');
    expect(argLabel('file-name')).toBe('File name');
  });
});
