// The chat's provider picker: one <select> whose options are a provider and
// one of its models together, and the settings of a chat not made yet.

import { Mode, type CreateConversationRequest, type Models } from '../backend/contract';
import { folderProblem } from '../tasks/paths';

/** The value of a picker option: the provider and the model in one string. */
export function pickKey(provider: string, model: string): string {
  return `${provider}\n${model}`;
}

/** The provider and the model a picker value names. */
export function parsePick(value: string): [provider: string, model: string] {
  const [p = '', m = ''] = value.split('\n');
  return [p, m];
}

/** A provider's models as the picker lists them: its default and fast ones first when the list lacks them; one '' (its own default) when it names none. */
export function modelsOf(p: { models: Models }): string[] {
  const list = [...(p.models.list ?? [])];
  for (const m of [p.models.default, p.models.fast]) if (m && !list.includes(m)) list.unshift(m);
  return list.length > 0 ? list : [''];
}

/** What is wrong with a new chat's folder, in one sentence ('' when it is a full path or empty, the home folder). */
export { folderProblem } from '../tasks/paths';

/** The settings of a new chat, until its first message creates it. */
export class NewChat {
  provider = $state('');
  model = $state('');
  mode: Mode = $state(Mode.Ask);
  cwd = $state('');
  /** The host it works on ('' : this computer), and what the person calls it. */
  host = $state('');
  hostName = $state('');
  /** What is wrong with the folder ('' when nothing is). */
  readonly problem: string = $derived.by(() => folderProblem(this.cwd, this.host === '' ? '' : this.hostName || this.host));

  /** The request that makes the chat: only what was chosen, the server picks the rest. */
  request(): CreateConversationRequest {
    const cwd = this.cwd.trim();
    return {
      mode: this.mode,
      ...(this.provider !== '' ? { provider: this.provider } : {}),
      ...(this.model !== '' ? { model: this.model } : {}),
      ...(cwd !== '' ? { cwd } : {}),
      ...(this.host !== '' ? { host: this.host } : {}),
    };
  }
}
