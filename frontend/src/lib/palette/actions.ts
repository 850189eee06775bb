// What the palette offers to do to a task from its row, without opening it:
// the same actions as its card, the one that helps most first.

import { Status, isResumable, type Task } from '../backend/contract';

/** An action on a task's palette row. */
export const TaskAction = { Allow: 'allow', Deny: 'deny', Stop: 'stop', Resume: 'resume', Retry: 'retry' } as const;
export type TaskAction = (typeof TaskAction)[keyof typeof TaskAction];

/** The words on each action's button. */
export const actionLabel: Record<TaskAction, string> = {
  [TaskAction.Allow]: 'Allow',
  [TaskAction.Deny]: 'Deny',
  [TaskAction.Stop]: 'Stop',
  [TaskAction.Resume]: 'Resume',
  [TaskAction.Retry]: 'Try again',
};

/**
 * The actions a task's row offers, the first one the one Ctrl+Enter runs:
 * Allow and Deny while it asks, Stop while it works or waits, Resume (a
 * chat task that did not finish) and Try again once it ended.
 */
export function taskActions(t: Pick<Task, 'status' | 'ask' | 'conversationId' | 'provider'>): TaskAction[] {
  switch (t.status) {
    case Status.NeedsYou:
      return t.ask ? [TaskAction.Allow, TaskAction.Deny, TaskAction.Stop] : [TaskAction.Stop];
    case Status.Running:
    case Status.Queued:
      return [TaskAction.Stop];
    case Status.Failed:
    case Status.Stopped:
    case Status.Interrupted:
      return isResumable(t) ? [TaskAction.Resume, TaskAction.Retry] : [TaskAction.Retry];
    case Status.Done:
      return [TaskAction.Retry];
  }
  return [];
}
