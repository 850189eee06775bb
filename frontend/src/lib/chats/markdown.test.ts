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
