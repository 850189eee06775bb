// How a finished task reads, in words: the chip's word and colour, the one
// line a folded card shows, and the action that helps when one does. Red is
// kept for real failures: a task the person declined or stopped is grey.
// The line is the last meaningful line of what it printed, not a test
// runner's per-file noise; exit codes and signals are said as sentences.

import { ResultSource, Status, isResumable, type Task } from '../backend/contract';
import { Icon, Tone, firstSentence, interruptedDetail, statusLanguage } from './language';

/** What a card offers next to a finished task's line. */
export const NextStep = { None: '', Resume: 'resume', Retry: 'retry', SwitchProvider: 'switch-provider' } as const;
export type NextStep = (typeof NextStep)[keyof typeof NextStep];

/** A task's status as a card says it. */
export interface Outcome {
  word: string;
  tone: Tone;
  icon: Icon;
  /** One line: what came of it, or why it did not finish ('' when nothing is known). */
  line: string;
  /** True when the line is a failure's reason (shown red). */
  failure: boolean;
  next: NextStep;
}

/** The error the runner gives a task whose question the person denied. */
const declinedError = /^(you declined|the person declined)|declined it\b/i;
/** The error of a question nobody answered in time. */
const noAnswerError = /^no answer within/i;

const signals: Record<string, string> = {
  SIGKILL: 'It was killed (SIGKILL), often because it ran out of memory or took too long.',
  SIGTERM: 'It was ended from outside (SIGTERM).',
  SIGINT: 'It was interrupted (SIGINT, like Ctrl-C).',
  SIGSEGV: 'It crashed (SIGSEGV, a memory fault).',
  SIGABRT: 'It aborted (SIGABRT).',
  SIGPIPE: 'Its output went nowhere (SIGPIPE).',
};

/** An exit code as a sentence. */
export function exitWords(code: number): string {
  switch (code) {
    case 127:
      return 'A command in it was not found (exit code 127).';
    case 126:
      return 'A command in it could not be run: not allowed or not a program (exit code 126).';
    case 130:
      return 'It was interrupted (exit code 130, like Ctrl-C).';
    case 137:
      return 'It was killed (exit code 137), often because it ran out of memory.';
    case 143:
      return 'It was ended from outside (exit code 143, SIGTERM).';
    default:
      return `It failed with exit code ${code}.`;
  }
}

// eslint-disable-next-line no-control-regex
const ansi = /\u001b\[[0-9;?]*[A-Za-z]/g;

/** Lines test runners and build tools print that say nothing on their own. */
const noise: readonly RegExp[] = [
  /^[✓✔√]\s/, // a passing file or test
  /^(Duration|Start at|Time:|Ran \d+ tests? in|Done in|Finished in|real|user|sys)\b/i,
  /^[-=─━_*~·.]{3,}$/, // rules
  /^\[?[#=>\s.-]*\]?\s*\d{1,3}%/, // progress
  /^(npm|yarn|pnpm) (notice|warn|timing|http|info)\b/i,
  /^> /, // npm's echo of the script
  /^(Snapshots|Test Files)\s/i,
  /^\s*at\s+\S+.*:\d+:\d+\)?$/, // a stack frame
  /^(RUN|DEV)\s+v\d/,
];

/** Words that mark a line saying what went wrong. */
const errorWords = /\b(error|errors|fail|failed|failing|failure|panic|exception|traceback|fatal|not found|denied|cannot|can't|unable|refused|timed? ?out)\b|[✗✘×]/i;

function cleanLines(text: string): string[] {
  return text
    .replace(ansi, '')
    .split('\n')
    .map((l) => l.replace(/\s+$/, '').trim())
    .filter((l) => l !== '');
}

const cap = (s: string, n = 160): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/**
 * The last line of text that says something: past test runners' per-file
 * lines, timings, rules and progress bars. With failed, the last line that
 * names an error wins. '' when there is none.
 */
export function meaningfulLine(text: string, failed = false): string {
  const lines = cleanLines(text);
  if (failed) {
    for (let i = lines.length - 1; i >= 0; i--) {
      const l = lines[i] ?? '';
      if (errorWords.test(l) && !/^\s*at\s/.test(l) && !/\b0 (failed|errors?)\b/i.test(l)) return cap(l);
    }
  }
  for (let i = lines.length - 1; i >= 0; i--) {
    const l = lines[i] ?? '';
    if (!noise.some((n) => n.test(l))) return cap(l);
  }
  // Only noise: say the last passing line in words.
  const last = lines[lines.length - 1] ?? '';
  const m = /^[✓✔√]\s+(\S+)\s+\((\d+) tests?\)/.exec(last);
  if (m) return `${m[2]} ${m[2] === '1' ? 'test' : 'tests'} passed in ${m[1]}`;
  return cap(last);
}

/** Reports whether a task failed because the person said no. */
export function isDeclined(t: Pick<Task, 'status' | 'error'>): boolean {
  return t.status === Status.Failed && declinedError.test(t.error.trim());
}

/** The reason a task did not finish, as a sentence. */
function reasonOf(t: Pick<Task, 'error' | 'exitCode' | 'summary' | 'conversationId'>): string {
  const err = t.error.trim();
  const sig = /^killed by (SIG[A-Z]+)$/.exec(err);
  if (sig) return signals[sig[1] ?? ''] ?? `It was killed (${sig[1]}).`;
  const code = /^exited with code (\d+)$/.exec(err);
  if (code || (err === '' && t.exitCode !== null && t.exitCode !== 0)) {
    const n = code ? Number(code[1]) : (t.exitCode ?? 1);
    // A command's own last error line says more than its exit code.
    const said = t.conversationId === '' ? meaningfulLine(t.summary, true) : '';
    return said !== '' && errorWords.test(said) ? said : exitWords(n);
  }
  return err === '' ? '' : cap(firstSentence(err), 200);
}

/** How a task's outcome reads on its card. */
export function outcomeOf(t: Pick<Task, 'status' | 'error' | 'exitCode' | 'summary' | 'conversationId' | 'result'>): Outcome {
  const base = statusLanguage[t.status];
  const chat = t.conversationId !== '';
  const summaryLine = (): string => (chat ? firstSentence(t.summary) : meaningfulLine(t.summary));
  const resume = isResumable(t) ? NextStep.Resume : NextStep.Retry;
  switch (t.status) {
    case Status.Done:
      return { word: t.result?.source === ResultSource.Check ? 'Done (verified)' : base.word, tone: base.tone, icon: base.icon, line: summaryLine(), failure: false, next: NextStep.None };
    case Status.Stopped:
      return { word: base.word, tone: base.tone, icon: base.icon, line: 'Stopped by you.', failure: false, next: resume };
    case Status.Interrupted:
      return { word: base.word, tone: base.tone, icon: base.icon, line: interruptedDetail, failure: false, next: resume };
    case Status.Failed: {
      const err = t.error.trim();
      if (declinedError.test(err)) return { word: 'Declined', tone: Tone.Grey, icon: Icon.Square, line: 'You said no to what it asked, so it stopped there.', failure: false, next: NextStep.Retry };
      if (noAnswerError.test(err)) return { word: 'No answer', tone: Tone.Grey, icon: Icon.Clock, line: 'Nobody answered its question within an hour, so it stopped.', failure: false, next: NextStep.Retry };
      const provider = /is not ready|reached its (usage )?limit|usage limit|no connected provider|cannot ask before it acts/i.test(err);
      return { word: base.word, tone: base.tone, icon: base.icon, line: reasonOf(t), failure: true, next: provider ? NextStep.SwitchProvider : chat ? resume : NextStep.Retry };
    }
    default:
      return { word: base.word, tone: base.tone, icon: base.icon, line: '', failure: false, next: NextStep.None };
  }
}
