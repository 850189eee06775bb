// A small markdown renderer for model replies. Every piece of the model's text
// is escaped before it becomes HTML; the only markup is what this file writes
// itself (paragraphs, headings, lists, quotes, inline code, bold, italics,
// links to http(s) only, fenced code with a simple highlighter, GitHub-style
// pipe tables).

const escapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML content and attribute values. */
export function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (c) => escapes[c] ?? c);
}

/** Inline markdown of one block, escaped. */
export function inline(src: string): string {
  let out = '';
  let i = 0;
  const rest = (): string => src.slice(i);
  while (i < src.length) {
    const r = rest();
    let m: RegExpExecArray | null;
    if ((m = /^(`+)([\s\S]*?[^`])\1(?!`)/.exec(r))) {
      out += `<code>${escapeHTML((m[2] ?? '').trim() === '' ? (m[2] ?? '') : (m[2] ?? '').replace(/^ (.*) $/s, '$1'))}</code>`;
      i += m[0].length;
    } else if ((m = /^\*\*(?=\S)([\s\S]*?\S)\*\*/.exec(r)) || (m = /^__(?=\S)([\s\S]*?\S)__/.exec(r))) {
      out += `<strong>${inline(m[1] ?? '')}</strong>`;
      i += m[0].length;
    } else if ((m = /^\*(?=\S)([^*]*?\S)\*/.exec(r)) || (m = /^_(?=\S)([^_]*?\S)_(?![A-Za-z0-9])/.exec(r))) {
      out += `<em>${inline(m[1] ?? '')}</em>`;
      i += m[0].length;
    } else if ((m = /^\[([^\]]+)\]\(([^)\s]+)\)/.exec(r))) {
      const href = m[2] ?? '';
      if (/^https?:\/\//i.test(href)) out += `<a href="${escapeHTML(href)}" target="_blank" rel="noopener noreferrer">${inline(m[1] ?? '')}</a>`;
      else out += `${inline(m[1] ?? '')} (${escapeHTML(href)})`;
      i += m[0].length;
    } else {
      const next = r.slice(1).search(/[`*_[]/);
      const n = next < 0 ? r.length : next + 1;
      out += escapeHTML(r.slice(0, n));
      i += n;
    }
  }
  return out;
}

const keywords = new Set(
  (
    'break case catch class const continue def default defer do elif else enum export extends false fn for from func function go if impl import in interface let match mut new nil none null package pass pub raise return self static struct switch this throw true try type undefined use var while with yield async await echo fi then done esac local'
  ).split(' '),
);

/** A code block's text as escaped HTML with spans for comments, strings, numbers and keywords. */
export function highlight(code: string): string {
  const re = /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)|("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`)|(\b\d[\d_.]*(?:e[+-]?\d+)?\b)|([A-Za-z_$][\w$]*)/g;
  let out = '';
  let last = 0;
  for (let m = re.exec(code); m; m = re.exec(code)) {
    out += escapeHTML(code.slice(last, m.index));
    const [t] = m;
    if (m[1] !== undefined) out += `<span class="tok-comment">${escapeHTML(t)}</span>`;
    else if (m[2] !== undefined) out += `<span class="tok-string">${escapeHTML(t)}</span>`;
    else if (m[3] !== undefined) out += `<span class="tok-number">${escapeHTML(t)}</span>`;
    else if (keywords.has(t)) out += `<span class="tok-keyword">${escapeHTML(t)}</span>`;
    else out += escapeHTML(t);
    last = m.index + t.length;
  }
  return out + escapeHTML(code.slice(last));
}

/** The cells of a table row ("| a | b |" or "a | b"); a pipe escaped with a backslash, or inside `code`, stays in its cell. */
export function tableCells(line: string): string[] {
  let t = line.trim();
  if (t.startsWith('|')) t = t.slice(1);
  if (t.endsWith('|') && !t.endsWith('\\|')) t = t.slice(0, -1);
  const cells: string[] = [];
  let cell = '';
  let code = false;
  for (let i = 0; i < t.length; i++) {
    const c = t[i];
    if (c === '\\' && t[i + 1] === '|') {
      cell += '|';
      i++;
    } else if (c === '`') {
      code = !code;
      cell += c;
    } else if (c === '|' && !code) {
      cells.push(cell.trim());
      cell = '';
    } else cell += c;
  }
  cells.push(cell.trim());
  return cells;
}

/** Fence languages that are output, not code: shown without highlighting. */
const plainLangs = new Set(['text', 'txt', 'plain', 'output', 'console']);

const delimiterRow = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

/** Renders markdown (a whole reply, or the part streamed so far) to safe HTML. */
export function renderMarkdown(src: string): string {
  const lines = src.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let para: string[] = [];
  const flush = (): void => {
    if (para.length > 0) out.push(`<p>${inline(para.join('\n')).replace(/\n/g, '<br>')}</p>`);
    para = [];
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    const fence = /^\s*(```+|~~~+)\s*([\w+#.-]*)/.exec(line);
    if (fence) {
      flush();
      const mark = fence[1] ?? '```';
      const lang = fence[2] ?? '';
      const body: string[] = [];
      i++;
      while (i < lines.length && !(lines[i] ?? '').trim().startsWith(mark)) body.push(lines[i++] ?? '');
      i++; // the closing fence (or the end, while it streams)
      const cls = lang ? ` data-lang="${escapeHTML(lang)}"` : '';
      // Plain output (a command's) is shown as it is, not coloured as code.
      const code = plainLangs.has(lang.toLowerCase()) ? escapeHTML(body.join('\n')) : highlight(body.join('\n'));
      out.push(`<pre class="code"${cls}><code>${code}</code></pre>`);
      continue;
    }
    if (line.trim() === '') {
      flush();
      i++;
      continue;
    }
    const h = /^(#{1,6})\s+(.*)$/.exec(line);
    if (h) {
      flush();
      const level = Math.min(6, (h[1] ?? '#').length + 2);
      out.push(`<h${level}>${inline(h[2] ?? '')}</h${level}>`);
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      out.push('<hr>');
      i++;
      continue;
    }
    const item = /^\s*([-*+]|\d+[.)])\s+/.exec(line);
    if (item) {
      flush();
      const ordered = /\d/.test(item[1] ?? '');
      const items: string[] = [];
      while (i < lines.length) {
        const l = lines[i] ?? '';
        const m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(l);
        if (m && /\d/.test(m[1] ?? '') === ordered) {
          items.push(m[2] ?? '');
        } else if (l.trim() !== '' && /^\s{2,}/.test(l) && items.length > 0) {
          items[items.length - 1] += `\n${l.trim()}`;
        } else break;
        i++;
      }
      const tag = ordered ? 'ol' : 'ul';
      out.push(`<${tag}>${items.map((t) => `<li>${inline(t).replace(/\n/g, '<br>')}</li>`).join('')}</${tag}>`);
      continue;
    }
    const next = lines[i + 1] ?? '';
    if (line.includes('|') && delimiterRow.test(next) && next.includes('-') && (next.includes('|') || line.trim().startsWith('|'))) {
      const head = tableCells(line);
      const aligns = tableCells(next).map((d) => (d.startsWith(':') && d.endsWith(':') ? 'center' : d.endsWith(':') ? 'right' : d.startsWith(':') ? 'left' : ''));
      if (aligns.length === head.length) {
        flush();
        i += 2;
        const rows: string[][] = [];
        while (i < lines.length && (lines[i] ?? '').trim() !== '' && (lines[i] ?? '').includes('|')) rows.push(tableCells(lines[i++] ?? ''));
        const cell = (tag: string, text: string, col: number): string => {
          const a = aligns[col] ?? '';
          return `<${tag}${a ? ` style="text-align:${a}"` : ''}>${inline(text)}</${tag}>`;
        };
        const thead = `<thead><tr>${head.map((h, c) => cell('th', h, c)).join('')}</tr></thead>`;
        const tbody = rows.length > 0 ? `<tbody>${rows.map((r) => `<tr>${head.map((_, c) => cell('td', r[c] ?? '', c)).join('')}</tr>`).join('')}</tbody>` : '';
        out.push(`<div class="table"><table>${thead}${tbody}</table></div>`);
        continue;
      }
    }
    if (/^\s*>/.test(line)) {
      flush();
      const q: string[] = [];
      while (i < lines.length && /^\s*>/.test(lines[i] ?? '')) q.push((lines[i++] ?? '').replace(/^\s*>\s?/, ''));
      out.push(`<blockquote>${renderMarkdown(q.join('\n'))}</blockquote>`);
      continue;
    }
    para.push(line);
    i++;
  }
  flush();
  return out.join('');
}
