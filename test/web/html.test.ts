import { describe, expect, it } from 'vitest';
import { escapeHtml, html, isHtml, join, raw } from '../../src/web/html.js';
import { page } from '../../src/web/layout.js';
import { liveAttrs } from '../../src/web/sse.js';

const HOSTILE = `"><script>alert('x')</script><img src=x onerror=alert(1)> & \` '`;

describe('html templates', () => {
  it('escapes an interpolated value in element content', () => {
    const out = html`<td>${HOSTILE}</td>`.text;
    expect(out).not.toContain('<script>');
    expect(out).not.toContain('<img');
    expect(out).toBe(`<td>&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; &amp; &#96; &#39;</td>`);
  });

  it('escapes a value in a quoted attribute, so it cannot close the attribute or add one', () => {
    const out = html`<a href="/ui/nodes/${HOSTILE}" title='${HOSTILE}'>x</a>`.text;
    // Still one tag with exactly its two attributes: the value never ended its quotes.
    expect(out).toMatch(/^<a href="[^"<>]*" title='[^'<>]*'>x<\/a>$/);
  });

  it('joins arrays, escaping each plain item and keeping Html items', () => {
    const items = ['<b>', html`<i>${'&'}</i>`, ['nested <x>']];
    expect(html`<p>${items}</p>`.text).toBe('<p>&lt;b&gt;<i>&amp;</i>nested &lt;x&gt;</p>');
  });

  it('renders null, undefined and false as nothing, numbers and true as text', () => {
    expect(html`${null}|${undefined}|${false}|${0}|${true}`.text).toBe('|||0|true');
  });

  it('keeps raw markup and Html as they are, and escapes a separator given as text', () => {
    expect(html`${raw('<br>')}`.text).toBe('<br>');
    expect(join(['a', 'b'], '<hr>').text).toBe('a&lt;hr&gt;b');
    expect(join(['a', 'b'], raw('<hr>')).text).toBe('a<hr>b');
    expect(isHtml(html`x`)).toBe(true);
    expect(isHtml({ text: '<script>' })).toBe(false);
  });

  it('does not trust an object that merely looks like Html', () => {
    const fake = { text: '<script>alert(1)</script>' };
    expect(html`${fake}`.text).toBe('[object Object]');
  });

  it('escapes every character that matters', () => {
    expect(escapeHtml(`&<>"'\``)).toBe('&amp;&lt;&gt;&quot;&#39;&#96;');
  });

  it('escapes the page title and keeps the body', () => {
    const doc = page({ title: HOSTILE, nav: 'nodes', body: html`<p>${HOSTILE}</p>` }).text;
    expect(doc).not.toContain('<script>');
    expect(doc).toContain('aria-current="page"');
    expect(doc).toContain('sse-connect="/ui/events"');
    expect(page({ title: 't', nav: 'nodes', body: html``, live: false }).text).not.toContain('sse-connect');
  });

  it('writes a live fragment\'s attributes with the event names', () => {
    expect(liveAttrs('/ui/x?a=1&b=2', ['node-1', 'ring']).text).toBe('hx-get="/ui/x?a=1&amp;b=2" hx-trigger="sse:node-1, sse:ring" hx-swap="outerHTML" hx-sync="this:replace"');
  });
});
