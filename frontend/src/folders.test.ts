/// <reference types="node" />
// ESLint's import-x/no-cycle keeps the modules a tree file by file, but two
// folders can still import each other through different files (tasks →
// approvals → tasks). This keeps the folders a tree too: each folder of
// src/ is one room, and no import runs from one room back into a room that
// reaches it. A file that sits loose in src/, src/lib/ or src/components/
// is a room of its own: those folders hold rooms, they are not one.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = dirname(fileURLToPath(import.meta.url));

/** One import: the importing file and the file it names (both relative to src), and how it named it. */
interface Edge {
  from: string;
  to: string;
  spec: string;
}

/** The loose files' folders: what sits directly in them is a room of its own. */
const holders = new Set(['.', 'lib', 'components']);

/** The room a file (relative to src) belongs to: its folder, or itself when it sits loose. */
function roomOf(file: string): string {
  const dir = file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : '.';
  return holders.has(dir) ? file : dir;
}

/**
 * Every loop among the rooms the edges join, one line each: the rooms in
 * order back to the first, then the import that makes each step. Rooms in
 * one loop are found together (Tarjan's strongly connected components); a
 * loop is one shortest way round from the component's first room.
 */
function folderCycles(edges: readonly Edge[]): string[] {
  const next = new Map<string, Map<string, Edge>>();
  for (const e of edges) {
    const a = roomOf(e.from);
    const b = roomOf(e.to);
    if (a === b) continue;
    let m = next.get(a);
    if (!m) next.set(a, (m = new Map()));
    if (!m.has(b)) m.set(b, e);
    if (!next.has(b)) next.set(b, new Map());
  }
  const rooms = [...next.keys()].sort();
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let n = 0;
  const visit = (v: string): void => {
    index.set(v, n);
    low.set(v, n);
    n++;
    stack.push(v);
    onStack.add(v);
    for (const w of [...(next.get(v)?.keys() ?? [])].sort()) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const c: string[] = [];
    for (;;) {
      const w = stack.pop() as string;
      onStack.delete(w);
      c.push(w);
      if (w === v) break;
    }
    if (c.length > 1) components.push(c.sort());
  };
  for (const r of rooms) if (!index.has(r)) visit(r);
  const out: string[] = [];
  for (const c of components.sort((a, b) => ((a[0] ?? '') < (b[0] ?? '') ? -1 : 1))) {
    const inside = new Set(c);
    const start = c[0] as string;
    // Breadth first from start, inside the component, back to start.
    const from = new Map<string, string>();
    const queue = [start];
    let end = '';
    while (queue.length > 0 && end === '') {
      const v = queue.shift() as string;
      for (const w of [...(next.get(v)?.keys() ?? [])].sort()) {
        if (!inside.has(w)) continue;
        if (w === start) {
          end = v;
          break;
        }
        if (!from.has(w)) {
          from.set(w, v);
          queue.push(w);
        }
      }
    }
    const path = [start];
    for (let v = end; v !== start; v = from.get(v) as string) path.splice(1, 0, v);
    path.push(start);
    const steps: string[] = [];
    for (let i = 0; i + 1 < path.length; i++) {
      const e = next.get(path[i] as string)?.get(path[i + 1] as string) as Edge;
      steps.push(`${e.from} imports ${e.spec}`);
    }
    out.push(`${path.join(' → ')} (${steps.join('; ')})`);
  }
  return out;
}

/** Every .ts and .svelte file under dir, as paths relative to src with forward slashes. */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (/\.(ts|svelte)$/.test(e.name)) out.push(relative(src, p).split(sep).join('/'));
  }
  return out;
}

/** The relative imports of a file's text: import … from, export … from, import '…' and import('…'). */
function importsOf(text: string): string[] {
  const re = /\b(?:import|export)\s[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|\bimport\s+['"]([^'"]+)['"]/g;
  const out: string[] = [];
  for (const m of text.matchAll(re)) {
    const spec = m[1] ?? m[2] ?? m[3] ?? '';
    if (spec.startsWith('.')) out.push(spec);
  }
  return out;
}

/** The file an import names: as written, with .ts, or a folder's index.ts. */
function resolved(path: string): string {
  for (const p of [path, `${path}.ts`, join(path, 'index.ts')]) if (existsSync(p) && statSync(p).isFile()) return p;
  return path;
}

/** The import edges between src's files (by path relative to src). */
function edgesOfSrc(): Edge[] {
  const edges: Edge[] = [];
  for (const file of sources(src)) {
    for (const spec of importsOf(readFileSync(join(src, file), 'utf8'))) {
      const to = relative(src, resolved(resolve(src, dirname(file), spec))).split(sep).join('/');
      edges.push({ from: file, to, spec });
    }
  }
  return edges;
}

describe('the folders of src', () => {
  it('make a tree: no folder imports one that imports it back', () => {
    expect(folderCycles(edgesOfSrc())).toEqual([]);
  });
});

describe('folderCycles', () => {
  it('names a loop through two folders with the files that make it', () => {
    const edges: Edge[] = [
      { from: 'lib/tasks/store.svelte.ts', to: 'lib/approvals/approvals.ts', spec: '../approvals/approvals' },
      { from: 'lib/approvals/approvals.ts', to: 'lib/tasks/time.ts', spec: '../tasks/time' },
      { from: 'lib/tasks/store.svelte.ts', to: 'lib/backend/contract.ts', spec: '../backend/contract' },
    ];
    expect(folderCycles(edges)).toEqual([
      'lib/approvals → lib/tasks → lib/approvals (lib/approvals/approvals.ts imports ../tasks/time; lib/tasks/store.svelte.ts imports ../approvals/approvals)',
    ]);
  });

  it('lets files of one folder import each other, and loose files stand alone', () => {
    const edges: Edge[] = [
      { from: 'lib/tasks/a.ts', to: 'lib/tasks/b.ts', spec: './b' },
      { from: 'lib/tasks/b.ts', to: 'lib/tasks/a.ts', spec: './a' },
      { from: 'lib/context.ts', to: 'lib/tasks/a.ts', spec: './tasks/a' },
      { from: 'lib/tasks/a.ts', to: 'lib/money.ts', spec: '../money' },
    ];
    expect(folderCycles(edges)).toEqual([]);
  });

  it('finds a loop through three folders', () => {
    const edges: Edge[] = [
      { from: 'a/x.ts', to: 'b/y.ts', spec: '../b/y' },
      { from: 'b/y.ts', to: 'c/z.ts', spec: '../c/z' },
      { from: 'c/z.ts', to: 'a/x.ts', spec: '../a/x' },
    ];
    expect(folderCycles(edges)).toHaveLength(1);
    expect(folderCycles(edges)[0]).toMatch(/^a → b → c → a /);
  });

  it('puts a file in its folder, and a loose one in a room of its own', () => {
    expect(roomOf('lib/tasks/store.svelte.ts')).toBe('lib/tasks');
    expect(roomOf('components/chats/parts/Header.svelte')).toBe('components/chats/parts');
    expect(roomOf('lib/nav.svelte.ts')).toBe('lib/nav.svelte.ts');
    expect(roomOf('components/PageFrame.svelte')).toBe('components/PageFrame.svelte');
    expect(roomOf('App.svelte')).toBe('App.svelte');
    expect(roomOf('lib/backend/index.ts')).toBe('lib/backend');
  });
});
