// A small OpenAI-compatible model server for the chat checks.

import { createServer } from 'node:http';

/** The model server: its /v1 address, every request it was sent, and its stop. */
export interface ModelServer {
  url: string;
  requests: any[];
  close: () => void;
}

/**
 * A small OpenAI-compatible model server for the chat checks. /v1/models lists
 * one model; /v1/chat/completions streams real SSE chunks: after a person's
 * message it calls a tool (read_file, or write_file when the message asks to
 * write), its arguments split across chunks; once the tool's result is in the
 * request it streams a text reply in several pieces. "split this into three
 * parts" makes it call delegate with three parts, and answer once their
 * results are back. A task's own chat (its system prompt says so) reads
 * notes.txt slowly (or writes summary.txt when told to write), then calls
 * report_result. "keep a worktree" delegates one part with worktree: true;
 * that helper (its instructions say "commit-in-worktree") commits a file
 * with run_command, then reports. "two helpers on one file" delegates "Fix
 * the bug" (commits src/app.ts) and "Write the tests" (leaves src/app.ts
 * and src/app.test.ts uncommitted), both in worktrees, so their cards and
 * the merged result name the overlap. "across the agents" delegates three parts,
 * one each to Claude Code, Codex and Gemini CLI. "split onto the agent box"
 * delegates one part to Claude Code on the host agent-box, in a worktree of
 * ~/repo there.
 */
export function startModelServer(): Promise<ModelServer> {
  const requests: any[] = [];
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
  const srv = createServer(async (req, res) => {
    let body = '';
    for await (const b of req) body += b;
    if (req.method === 'GET' && req.url?.endsWith('/models')) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'test-model', object: 'model', owned_by: 'e2e' }] }));
      return;
    }
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"error":{"message":"not found"}}');
      return;
    }
    const r: any = JSON.parse(body || '{}');
    requests.push(r);
    const msgs = ((r.messages ?? []) as any[]);
    let lastUser = -1;
    msgs.forEach((m, i) => {
      if (m.role === 'user') lastUser = i;
    });
    const userText = String(msgs[lastUser]?.content ?? '');
    const after = msgs.slice(lastUser + 1);
    const toolDone = after.some((m) => m.role === 'tool');
    const writing = /write/i.test(userText);
    const fetching = /curl/i.test(userText);
    const splitting = /split this into three parts/i.test(userText);
    const keeping = /keep a worktree/i.test(userText);
    const overlapping = /two helpers on one file/i.test(userText);
    const acrossAgents = /across the agents/i.test(userText);
    const ontoBox = /split onto the agent box/i.test(userText);
    const tabling = /as a table/i.test(userText);
    const system = msgs.filter((m) => m.role === 'system').map((m) => String(m.content ?? '')).join('\n');
    // A task's own chat (a background task or a helper): it reads the notes,
    // then reports. Its system prompt says it is a handed-off task, and only
    // tasks have report_result.
    const isTask = /handed off from another chat/i.test(system) || (r.tools ?? []).some((t: any) => t.function?.name === 'report_result');
    const drafting = /draft and fall over/i.test(userText);
    // A helper told "salvage-draft" writes a draft, then its model falls
    // over: the helper fails with uncommitted work in its worktree.
    if (isTask && /salvage-draft/.test(userText) && toolDone) {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end('{"error":{"message":"the model fell over","type":"server_error"}}');
      return;
    }
    // "over the limit": the account's quota is spent, for two hours.
    if (!isTask && /over the limit/i.test(userText)) {
      res.writeHead(402, { 'Content-Type': 'application/json', 'Retry-After': '7200' });
      res.end(JSON.stringify({ error: { message: 'You exceeded your current quota.', type: 'insufficient_quota' } }));
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    const id = `chatcmpl-${requests.length}`;
    const chunk = (delta: any, finish: string | null = null) =>
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: 'test-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
    /** Streams one tool call, its arguments cut in two. */
    const callTool = async (name: string, a: unknown) => {
      const args = JSON.stringify(a);
      const cut = Math.floor(args.length / 2);
      chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: `call_${requests.length}`, type: 'function', function: { name, arguments: '' } }] });
      await sleep(60);
      chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(0, cut) } }] });
      await sleep(60);
      chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(cut) } }] });
      chunk({}, 'tool_calls');
    };
    /** Streams a text reply in pieces. */
    const say = async (text: string) => {
      const pieces = text.match(/[\s\S]{1,12}/g) ?? [text];
      chunk({ role: 'assistant', content: '' });
      for (const p of pieces) {
        chunk({ content: p });
        await sleep(120);
      }
      chunk({}, 'stop');
    };
    if (isTask && /salvage-draft/.test(userText)) {
      await callTool('write_file', { path: 'draft.md', content: 'half a draft\n' });
    } else if (drafting) {
      if (!toolDone) await callTool('delegate', { parts: [{ title: 'Draft', instructions: 'Write the draft (salvage-draft).', worktree: true }] });
      else await say('The draft helper fell over; its work is kept.');
    } else if (isTask && /commit-in-worktree/.test(userText)) {
      if (!toolDone) {
        await sleep(300);
        await callTool('run_command', {
          command: "printf 'made by a helper\\n' > helper.txt && git add helper.txt && git -c user.name=t -c user.email=t@example.com commit -q -m 'Add helper.txt'",
        });
      } else {
        await sleep(200);
        await callTool('report_result', { summary: 'Committed `helper.txt` on its own branch.' });
      }
    } else if (isTask && /edit-app-(commit|leave)/.test(userText)) {
      const commit = /edit-app-commit/.test(userText);
      if (!toolDone) {
        await sleep(commit ? 300 : 600);
        await callTool('run_command', {
          command: commit
            ? "mkdir -p src && printf 'export const fixed = true;\\n' > src/app.ts && git add src && git -c user.name=t -c user.email=t@example.com commit -q -m 'Fix the bug'"
            : "mkdir -p src && printf 'export const tested = true;\\n' > src/app.ts && printf 'test(1);\\n' > src/app.test.ts",
        });
      } else {
        await callTool('report_result', { summary: commit ? 'Fixed the bug in `src/app.ts`.' : 'Wrote the tests.' });
      }
    } else if (isTask) {
      // Helper n of a split waits n seconds, so the cards show them at work side by side.
      const part = Number(/part (\d)/i.exec(userText)?.[1] ?? '0');
      if (!toolDone) {
        await sleep(part > 0 ? 1000 + part * 900 : writing ? 300 : 2500);
        if (writing) await callTool('write_file', { path: 'summary.txt', content: 'hello, summed up\n' });
        else await callTool('read_file', { path: 'notes.txt' });
      } else {
        await sleep(part > 0 ? 600 : 1200);
        const what = part > 0 ? `Part ${part} is done: the notes have one line.` : 'The notes say **hello from e2e**.';
        await callTool('report_result', { summary: `${what}\n\n- read \`notes.txt\`\n- changed nothing` });
      }
    } else if (ontoBox) {
      if (!toolDone) {
        await callTool('delegate', {
          parts: [{ title: 'On the box', instructions: 'WRITE box.txt', host: 'agent-box', provider: 'claude-code', cwd: '~/repo', worktree: true }],
        });
      } else {
        await say('The helper on the agent box is back.');
      }
    } else if (acrossAgents) {
      if (!toolDone) {
        await callTool('delegate', {
          parts: [
            { title: 'Tests', instructions: 'WRITE tests.txt with the tests', provider: 'Claude Code' },
            { title: 'Docs', instructions: 'WRITE docs.txt with the docs', provider: 'Codex' },
            { title: 'Notes', instructions: 'WRITE notes.txt with the notes', provider: 'Gemini CLI' },
          ],
        });
      } else {
        await say('Claude Code, Codex and Gemini CLI each wrote their file.');
      }
    } else if (overlapping) {
      if (!toolDone) {
        await callTool('delegate', {
          parts: [
            { title: 'Fix the bug', instructions: 'Fix the bug in src/app.ts and commit it (edit-app-commit).', worktree: true },
            { title: 'Write the tests', instructions: 'Write tests for src/app.ts (edit-app-leave).', worktree: true },
          ],
        });
      } else {
        await say('Both helpers are back; they changed the same file.');
      }
    } else if (keeping) {
      if (!toolDone) {
        await callTool('delegate', { parts: [{ title: 'Commit a file', instructions: 'Add helper.txt and commit it (commit-in-worktree).', worktree: true }] });
      } else {
        await say('The helper committed its file on a branch of its own.');
      }
    } else if (splitting) {
      if (!toolDone) {
        await callTool('delegate', {
          parts: [1, 2, 3].map((n) => ({ title: `Check part ${n}`, instructions: `Read notes.txt and count its lines (part ${n}).` })),
        });
      } else {
        const merged = String(after.find((m) => m.role === 'tool')?.content ?? '');
        const blocks = (merged.match(/^## /gm) ?? []).length;
        await say(`All ${blocks} helpers are back: every part found one line in the notes.`);
      }
    } else if (tabling) {
      await say('The files:\n\n| File | Lines |\n|:---|---:|\n| `notes.txt` | 1 |\n| out.txt | 1 |\n');
    } else if (!toolDone) {
      const name = fetching ? 'run_command' : writing ? 'write_file' : 'read_file';
      const args = fetching
        ? { command: 'curl -s -m 1 http://127.0.0.1:9/ || true' }
        : writing
          ? { path: 'out.txt', content: 'written by e2e\n' }
          : { path: 'notes.txt' };
      await callTool(name, args);
    } else {
      const text = fetching
        ? 'Tried the address; nothing answered.'
        : writing
          ? 'Done: I wrote `out.txt`.'
        : 'The file says **hello from e2e**.\n\nIt has:\n\n- one line\n- no `<script>` in it\n\n```go\nfunc main() { // ok\n}\n```';
      await say(text);
    }
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: 'test-model', choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`);
    res.end('data: [DONE]\n\n');
  });
  return new Promise((resolvePromise) => {
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      resolvePromise({ url: `http://127.0.0.1:${port}/v1`, requests, close: () => srv.close() });
    });
  });
}
