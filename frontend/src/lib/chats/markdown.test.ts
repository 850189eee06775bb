import { describe, expect, it } from 'vitest';
import { escapeHTML, highlight, inline, renderMarkdown } from './markdown';

describe('renderMarkdown', () => {
  it('shows a <script> in model text as text', () => {
    const html = renderMarkdown('Look: <script>alert(1)</script> and <img src=x onerror=alert(1)>');
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('escapes inside code, links and attributes', () => {
    expect(inline('`<b>`')).toBe('<code>&lt;b&gt;</code>');
    expect(renderMarkdown('```html\n<script>x</script>\n```')).toContain('&lt;script&gt;x&lt;/script&gt;');
    expect(inline('[x](javascript:alert(1))')).not.toContain('href');
    expect(inline('[x](https://a.b/?q="><script>)')).not.toContain('"><script>');
    expect(renderMarkdown('```"><x\n1\n```')).not.toContain('"><x');
    expect(escapeHTML(`<>&"'`)).toBe('&lt;&gt;&amp;&quot;&#39;');
  });

  it('renders paragraphs, lists, inline code and fenced code', () => {
    const html = renderMarkdown('Hello **there**\nsecond line\n\n- one\n- `two`\n\n1. a\n2. b\n\n```go\nfunc main() { // hi\n}\n```');
    expect(html).toContain('<p>Hello <strong>there</strong><br>second line</p>');
    expect(html).toContain('<ul><li>one</li><li><code>two</code></li></ul>');
    expect(html).toContain('<ol><li>a</li><li>b</li></ol>');
    expect(html).toContain('<pre class="code" data-lang="go"><code><span class="tok-keyword">func</span> main() { <span class="tok-comment">// hi</span>\n}</code></pre>');
  });

  it('renders an unclosed fence while it streams', () => {
    expect(renderMarkdown('```\nls -la')).toBe('<pre class="code"><code>ls -la</code></pre>');
  });

  it('highlights strings and numbers', () => {
    expect(highlight('x = "a<b" + 42')).toBe('x = <span class="tok-string">&quot;a&lt;b&quot;</span> + <span class="tok-number">42</span>');
  });
});

describe('tables', () => {
  it('renders a pipe table with its header, rows and alignment', () => {
    const html = renderMarkdown('Results:\n\n| File | Tests | Time |\n|:---|:---:|---:|\n| `a.ts` | 31 | 1.2s |\n| b.ts | **2** |\n');
    expect(html).toContain('<p>Results:</p>');
    expect(html).toContain('<table><thead><tr><th style="text-align:left">File</th><th style="text-align:center">Tests</th><th style="text-align:right">Time</th></tr></thead>');
    expect(html).toContain('<tr><td style="text-align:left"><code>a.ts</code></td><td style="text-align:center">31</td><td style="text-align:right">1.2s</td></tr>');
    // A short row is padded to the header's width.
    expect(html).toContain('<tr><td style="text-align:left">b.ts</td><td style="text-align:center"><strong>2</strong></td><td style="text-align:right"></td></tr>');
    expect(html).not.toContain('|');
  });

  it('renders a table without outer pipes and escapes its cells', () => {
    const html = renderMarkdown('a | b\n--- | ---\n<x> | `p|q`');
    expect(html).toContain('<th>a</th><th>b</th>');
    expect(html).toContain('<td>&lt;x&gt;</td><td><code>p|q</code></td>');
  });

  it('leaves pipes that are not a table as text', () => {
    expect(renderMarkdown('a | b\nc | d')).toBe('<p>a | b<br>c | d</p>');
    expect(renderMarkdown('| a | b |\n|---|')).not.toContain('<table>');
  });
});

describe('plain output', () => {
  it('shows a text fence as it is, uncoloured but escaped', () => {
    const html = renderMarkdown('```text\nhello from <e2e> if\n```');
    expect(html).toBe('<pre class="code" data-lang="text"><code>hello from &lt;e2e&gt; if</code></pre>');
  });
});
