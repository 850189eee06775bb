// Starting `conch serve` for the browser runs (run.ts, frames.ts).

import { spawn, type ChildProcess } from 'node:child_process';

/** How to start `conch serve`. */
export interface ServeOptions {
  bin: string;
  home: string;
  addr?: string;
  /** Added to this process's environment. */
  env?: Record<string, string>;
  timeoutMs?: number;
  onSpawn?: (child: ChildProcess) => void;
  onStderr?: (text: string) => void;
}

/**
 * Starts `conch serve` on home and resolves with the sign-in URL it prints.
 * onSpawn gets the process at once (so a caller can always stop it), and
 * onStderr every piece of its stderr.
 */
export function serveConch({ bin, home, addr = '127.0.0.1:0', env = {}, timeoutMs = 15_000, onSpawn = () => {}, onStderr = () => {} }: ServeOptions): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(bin, ['serve', '--home', home, '--addr', addr], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    onSpawn(child);
    let out = '';
    let log = '';
    const timer = setTimeout(() => reject(new Error(`conch serve printed no URL within ${timeoutMs / 1000} s; its stderr:\n${log}`)), timeoutMs);
    child.stderr.on('data', (b) => {
      log += b.toString();
      onStderr(b.toString());
    });
    child.stdout.on('data', (b) => {
      out += b.toString();
      const m = /^conch: serving (http:\/\/\S+\/#token=[0-9a-f]+)$/m.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolvePromise(m[1]);
      }
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`could not start ${bin}: ${e.message}`));
    });
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`conch serve exited (${code ?? sig}) before printing its URL; its stderr:\n${log}`));
    });
  });
}
