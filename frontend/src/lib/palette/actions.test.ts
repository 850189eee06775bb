import { describe, expect, it } from 'vitest';
import { Status } from '../backend/contract';
import { makeTask } from '../backend/fixture';
import { TaskAction, taskActions } from './actions';

describe('taskActions', () => {
  it('offers Allow and Deny first while a task asks, and Stop', () => {
    const t = makeTask({ id: 't1', status: Status.NeedsYou, ask: { id: 'a1', tool: 'run_command', detail: 'rm -rf build', askedAt: '', expiresAt: '' } });
    expect(taskActions(t)).toEqual([TaskAction.Allow, TaskAction.Deny, TaskAction.Stop]);
  });
  it('offers Stop while it works or waits', () => {
    expect(taskActions(makeTask({ id: 't1', status: Status.Running }))).toEqual([TaskAction.Stop]);
    expect(taskActions(makeTask({ id: 't1', status: Status.Queued }))).toEqual([TaskAction.Stop]);
  });
  it('offers Resume for a chat task that did not finish, Try again for any that ended', () => {
    expect(taskActions(makeTask({ id: 't1', status: Status.Interrupted, conversationId: 'c1' }))).toEqual([TaskAction.Resume, TaskAction.Retry]);
    expect(taskActions(makeTask({ id: 't1', status: Status.Failed, conversationId: '' }))).toEqual([TaskAction.Retry]);
    // A chat task on the shell would run the resume notice as a command.
    expect(taskActions(makeTask({ id: 't1', status: Status.Interrupted, conversationId: 'c1', provider: 'shell' }))).toEqual([TaskAction.Retry]);
    expect(taskActions(makeTask({ id: 't1', status: Status.Done, conversationId: 'c1' }))).toEqual([TaskAction.Retry]);
  });
});
