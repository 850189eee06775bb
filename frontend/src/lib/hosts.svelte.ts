import type { Backend } from './backend/backend';
import { HostStatus, type Host, type Task } from './backend/contract';

/**
 * HostsBook is the other computers Conch reaches (SPEC §6), as every
 * surface names them: a task's folder there reads "devbox:~/src/app", and
 * while its host is out of reach its card says since when, and that the
 * work carries on there. It loads at start, on host.changed and after a
 * reconnect; a load that fails keeps what was known.
 */
export class HostsBook {
  /** Every host, oldest first. */
  list: Host[] = $state([]);
  /** The first load has answered (hosts, or an error). */
  loaded = $state(false);
  /** Why the last load failed ('' when it did not). */
  error = $state('');

  readonly #backend: Backend;
  #asking: Promise<void> | null = null;
  #again = false;

  readonly #explain: (e: unknown) => string;

  /** explain turns a failed load into the sentence the Hosts section shows. */
  constructor(backend: Backend, explain: (e: unknown) => string = (e) => String(e)) {
    this.#backend = backend;
    this.#explain = explain;
  }

  /** Reads the hosts; a load asked for during one runs once more after it. */
  load(): Promise<void> {
    if (this.#asking) {
      this.#again = true;
      return this.#asking;
    }
    this.#asking = (async () => {
      do {
        this.#again = false;
        try {
          this.list = (await this.#backend.listHosts()).hosts ?? [];
          this.error = '';
        } catch (e) {
          // Kept as it was; the next change or reconnect asks again.
          this.error = this.#explain(e);
        } finally {
          this.loaded = true;
        }
      } while (this.#again);
      this.#asking = null;
    })();
    return this.#asking;
  }

  /** Keeps h, an answer newer than the list (an add, a test, an accept), in its place or at the end. */
  put(h: Host): void {
    const i = this.list.findIndex((o) => o.id === h.id);
    const cur = this.list[i];
    if (!cur) this.list.push(h);
    else if (h.rev >= cur.rev) this.list[i] = h;
  }

  /** Forgets a removed host. */
  drop(id: string): void {
    this.list = this.list.filter((h) => h.id !== id);
  }

  /** The host with id, if known. */
  get(id: string): Host | undefined {
    return this.list.find((h) => h.id === id);
  }

  /** What the person calls host id (its id while it is not known). */
  name(id: string): string {
    return this.get(id)?.name || id;
  }
}

/** A task's folder, with its host when it has one: "devbox:~/src/app". */
export function whereOf(t: Pick<Task, 'host' | 'cwd'>, name: (id: string) => string, short: (p: string) => string): string {
  if (!t.host) return short(t.cwd);
  return `${name(t.host)}:${t.cwd || '~'}`;
}

/** "10:42" in the person's own clock. */
function clockTime(at: string): string {
  return new Date(at).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
}

/** What a working task's card says while its host is out of reach ("" while it is not). */
export function awayLine(h: Pick<Host, 'name' | 'status' | 'since'> | undefined, time: (at: string) => string = clockTime): string {
  if (!h || h.status !== HostStatus.HostUnreachable || !h.since) return '';
  return `${h.name} unreachable since ${time(h.since)} — it carries on there`;
}

/** A coding-agent CLI found on a host, as Conch names its provider. */
export interface HostAgent {
  /** The provider's kind ("claude-code"), which a task there names. */
  kind: string;
  name: string;
}

/** The CLIs a host's last test found, by the commands' names (backend/host.Agent). */
const agentNames: Record<string, HostAgent> = {
  claude: { kind: 'claude-code', name: 'Claude Code' },
  codex: { kind: 'codex', name: 'Codex' },
  gemini: { kind: 'gemini', name: 'Gemini CLI' },
};

/** The coding-agent CLIs found on h at its last test, which a chat's task there can run on. */
export function hostAgents(h: Pick<Host, 'providers'>): HostAgent[] {
  return (h.providers ?? []).flatMap((p) => (agentNames[p.id] ? [agentNames[p.id]!] : []));
}
