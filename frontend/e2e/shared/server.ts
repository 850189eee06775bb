// The servers a browser run talks to: `conch serve` under test (one at a
// time, restarted by some checks), a page on another loopback port, and the
// coding-agent CLIs' scripted model servers.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { serveConch } from '../serve';
import { bin, temp } from './env';

/** The `conch serve` running now, and everything it wrote to stderr. */
export const conch: { child: ChildProcess | undefined; log: string } = { child: undefined, log: '' };

/** Starts `conch serve` and resolves with the sign-in URL it prints; env is added to this process's environment. */
export function startServer(home: string, addr: string, env: Record<string, string> = {}): Promise<string> {
  return serveConch({
    bin,
    home,
    addr,
    env,
    onSpawn: (child) => (conch.child = child),
    onStderr: (text) => (conch.log += text),
  });
}

/** Stops the running `conch serve`: SIGTERM, then SIGKILL after 3 s. */
export function stopServer(): void {
  const s = conch.child;
  if (s && s.exitCode === null && s.signalCode === null) {
    s.kill('SIGTERM');
    setTimeout(() => s.exitCode === null && s.signalCode === null && s.kill('SIGKILL'), 3000).unref();
  }
}

process.on('exit', () => {
  if (conch.child && conch.child.exitCode === null) conch.child.kill('SIGKILL');
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    stopServer();
    process.exit(130);
  });
}

/** The sign-in token of a link `conch serve` printed (it rides in the fragment). */
export function tokenOf(link: string): string {
  return new URL(link).hash.replace(/^#token=/, '');
}

/**
 * Serves a page on another loopback port, as another local server (another
 * person's, on a shared machine) would, and records what browsers send it.
 * The page tries to frame the app and to call its API.
 */
export function startOtherPortServer(appOrigin: string): Promise<{ origin: string; requests: { url: string; headers: IncomingHttpHeaders }[]; close: () => void }> {
  const requests: { url: string; headers: IncomingHttpHeaders }[] = [];
  const srv = createServer((req, res) => {
    requests.push({ url: req.url ?? '', headers: req.headers });
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(`<!doctype html><title>Another server</title>
<script>
  window.apiStatus = 'pending';
  fetch(${JSON.stringify(appOrigin + '/api/tasks')}, { credentials: 'include' })
    .then((r) => (window.apiStatus = String(r.status)), (e) => (window.apiStatus = 'blocked: ' + e.message));
</script>
<iframe id="app" src="${appOrigin}/" width="800" height="500"></iframe>`);
  });
  return new Promise((resolvePromise) => {
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      resolvePromise({ origin: `http://127.0.0.1:${port}`, requests, close: () => srv.close() });
    });
  });
}

/**
 * Starts the scripted model servers of the real coding-agent CLIs
 * (backend/testrig/agentrig/agentservers, built by `make e2e` and named by
 * CONCH_AGENT_SERVERS) and resolves with the environment that runs Claude
 * Code, Codex and Gemini CLI against them.
 */
export function startAgentServers(): Promise<{ env: Record<string, string>; close: () => void }> {
  const cmd = process.env.CONCH_AGENT_SERVERS;
  if (!cmd || !existsSync(cmd)) {
    return Promise.reject(new Error('CONCH_AGENT_SERVERS names no agentservers binary (make e2e builds it: go build -o build/bin/agentservers ./backend/testrig/agentrig/agentservers)'));
  }
  const child = spawn(cmd, [temp('conch-e2e-agents-')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const close = () => {
    child.stdin?.end();
    setTimeout(() => child.exitCode === null && child.kill('SIGKILL'), 3000).unref();
  };
  process.on('exit', () => child.exitCode === null && child.kill('SIGKILL'));
  return new Promise((resolvePromise, reject) => {
    let out = '';
    child.stdout?.on('data', (b) => {
      out += b.toString();
      const line = out.split('\n')[0] ?? '';
      if (out.includes('\n')) resolvePromise({ env: JSON.parse(line).env, close });
    });
    child.on('exit', (code) => reject(new Error(`agentservers exited (${code}) before printing its environment`)));
  });
}

/** A real host over SSH (backend/testrig/sshd/sshhost). */
export interface SSHHost {
  /** Where it cannot be served (not root), why; the rest is then empty. */
  skip?: string;
  alias: string;
  config: string;
  fingerprint: string;
  user: string;
  home: string;
  /** Takes it off the network, or brings it back. */
  down: () => Promise<void>;
  up: () => Promise<void>;
  /** Installs the real Claude Code CLI in the host user's ~/.local/bin, run with env (startAgentServers's). */
  claude: (env: Record<string, string>) => Promise<void>;
  /** Makes ~/repo on the host, as its user: a git repository of one commit. */
  repo: () => Promise<void>;
  close: () => void;
}

/**
 * Starts one real host: an sshd on a loopback port logging in as a Unix user
 * of its own (the sshhost command, built by `make e2e` and named by
 * CONCH_SSH_HOST; it needs root and says so otherwise).
 */
export function startSSHHost(): Promise<SSHHost> {
  const cmd = process.env.CONCH_SSH_HOST;
  if (!cmd || !existsSync(cmd)) {
    return Promise.reject(new Error('CONCH_SSH_HOST names no sshhost binary (make e2e builds it: go build -o build/bin/sshhost ./backend/testrig/sshd/sshhost)'));
  }
  const child = spawn(cmd, [], { stdio: ['pipe', 'pipe', 'inherit'] });
  process.on('exit', () => child.exitCode === null && child.kill('SIGKILL'));
  const waiting: ((line: any) => void)[] = [];
  let out = '';
  child.stdout?.on('data', (b) => {
    out += b.toString();
    for (let i = out.indexOf('\n'); i >= 0; i = out.indexOf('\n')) {
      const line = JSON.parse(out.slice(0, i));
      out = out.slice(i + 1);
      waiting.shift()?.(line);
    }
  });
  const next = () => new Promise<any>((r) => waiting.push(r));
  const say = async (what: string) => {
    const done = next();
    child.stdin?.write(`${what}\n`);
    const said = await done;
    if (said?.error) throw new Error(`sshhost ${what.split(' ')[0]}: ${said.error}`);
  };
  const close = () => {
    child.stdin?.end();
    setTimeout(() => child.exitCode === null && child.kill('SIGKILL'), 5000).unref();
  };
  return new Promise((resolvePromise, reject) => {
    child.on('exit', (code) => reject(new Error(`sshhost exited (${code}) before saying where its host is`)));
    void next().then((first) => {
      if (first.error) reject(new Error(`sshhost: ${first.error}`));
      else resolvePromise({ ...first, down: () => say('down'), up: () => say('up'), claude: (env) => say(`claude ${JSON.stringify(env)}`), repo: () => say('repo'), close });
    });
  });
}
