import { describe, expect, it } from 'vitest';
import { ResultSource, Status } from '../backend/contract';
import { makeTask } from '../backend/fixture';
import { NextStep, exitWords, isDeclined, meaningfulLine, outcomeOf } from './outcome';

const vitest = ['', ' RUN  v4.1.12 /work/app', '', ' ✓ src/billing/invoice.test.ts (31 tests) 1204ms', '', ' Test Files  1 passed (1)', '      Tests  31 passed (31)', '   Start at  12:00:01', '   Duration  1.52s', ''].join('\n');

describe('meaningfulLine', () => {
  it('skips a test runner’s per-file lines and timings', () => {
    expect(meaningfulLine(vitest)).toBe('Tests  31 passed (31)');
  });
  it('says a lone passing line in words', () => {
    expect(meaningfulLine(' ✓ src/billing/invoice.test.ts (31 tests) 1204ms\n')).toBe('31 tests passed in src/billing/invoice.test.ts');
  });
  it('finds the last error line of a failure, past stack frames and colours', () => {
    const out = 'building\n\u001b[31mError: Cannot find module "x"\u001b[0m\n    at load (/app/a.js:3:9)\n\nDone in 0.4s';
    expect(meaningfulLine(out, true)).toBe('Error: Cannot find module "x"');
  });
  it('does not take "0 failed" for a failure', () => {
    expect(meaningfulLine('Tests 3 passed, 0 failed\nmake: *** [all] Error 2', true)).toBe('make: *** [all] Error 2');
  });
  it('keeps an ordinary last line and cuts a long one', () => {
    expect(meaningfulLine('Hello from Conch\nTue Dec  1 12:00:00 UTC 2026\n')).toBe('Tue Dec  1 12:00:00 UTC 2026');
    expect(meaningfulLine('x'.repeat(400)).length).toBe(160);
    expect(meaningfulLine('')).toBe('');
  });
});

describe('outcomeOf', () => {
  it('says a declined task in grey, not as a failure', () => {
    const t = makeTask({ id: 'a', status: Status.Failed, error: 'You declined' });
    const o = outcomeOf(t);
    expect(isDeclined(t)).toBe(true);
    expect(o).toMatchObject({ word: 'Declined', tone: 'grey', failure: false, next: NextStep.Retry });
  });
  it('says a question nobody answered without red', () => {
    expect(outcomeOf(makeTask({ id: 'a', status: Status.Failed, error: 'No answer within an hour' }))).toMatchObject({ word: 'No answer', tone: 'grey', failure: false });
  });
  it('says a stop was the person’s, and offers Resume to a chat task', () => {
    expect(outcomeOf(makeTask({ id: 'a', status: Status.Stopped }))).toMatchObject({ line: 'Stopped by you.', tone: 'grey', next: NextStep.Retry });
    expect(outcomeOf(makeTask({ id: 'a', status: Status.Stopped, conversationId: 'c' })).next).toBe(NextStep.Resume);
    expect(outcomeOf(makeTask({ id: 'a', status: Status.Interrupted, conversationId: 'c' }))).toMatchObject({ tone: 'orange', next: NextStep.Resume });
  });
  it('says signals and exit codes as sentences, preferring the command’s own error line', () => {
    expect(outcomeOf(makeTask({ id: 'a', status: Status.Failed, error: 'killed by SIGKILL' })).line).toBe('It was killed (SIGKILL), often because it ran out of memory or took too long.');
    expect(outcomeOf(makeTask({ id: 'a', status: Status.Failed, error: 'exited with code 1', exitCode: 1, summary: 'ok 1\nnot ok 2' })).line).toBe('It failed with exit code 1.');
    expect(outcomeOf(makeTask({ id: 'a', status: Status.Failed, error: 'exited with code 2', exitCode: 2, summary: 'FAIL src/a.test.ts\n× adds (3ms)\nTests 1 failed' })).line).toBe('Tests 1 failed');
    expect(outcomeOf(makeTask({ id: 'a', status: Status.Failed, error: 'exited with code 127', exitCode: 127 }))).toMatchObject({ line: exitWords(127), tone: 'red', failure: true });
  });
  it('offers another provider when the provider was the problem', () => {
    const o = outcomeOf(makeTask({ id: 'a', status: Status.Failed, conversationId: 'c', error: 'Codex CLI is not ready: not signed in. Providers that can take work: Ollama' }));
    expect(o).toMatchObject({ next: NextStep.SwitchProvider, failure: true, line: 'Codex CLI is not ready: not signed in.' });
  });
  it('reads a done task’s summary: a command’s last meaningful line, a chat task’s first sentence', () => {
    expect(outcomeOf(makeTask({ id: 'a', status: Status.Done, summary: vitest })).line).toBe('Tests  31 passed (31)');
    expect(outcomeOf(makeTask({ id: 'a', status: Status.Done, conversationId: 'c', summary: 'Fixed the build. Then more.' })).line).toBe('Fixed the build.');
    expect(outcomeOf(makeTask({ id: 'a', status: Status.Done, result: { text: '', source: ResultSource.Check, at: '' } })).word).toBe('Done (verified)');
  });
});
