/**
 * Inline SVG drawn on the server: a conductor group as a ring (each live conductor an arc the size
 * of its share of the nodes) and the take-over timeline (ring events as marked lines, reconcile
 * passes as bars). Every value goes through `html` (escaped); every figure has a title and a
 * description and carries its numbers as text, so it reads without colour, and each page puts a
 * table with the same numbers beside it for screen readers. Colours are presentation attributes
 * (no style attribute or element), and lines and text use `currentColor` to follow dark mode.
 */
import { html, join } from './html.js';
import type { Html } from './html.js';

/** Distinct hues that read on a light and a dark background alike. */
const PALETTE = ['#2f6fd6', '#d9822b', '#2e9e5b', '#b44fc4', '#c9453a', '#1b9aaa', '#8c7a16', '#6b6fd6'];

export interface RingSegment {
  /** The conductor's hostname (shown cut to 16 characters; whole in the arc's title). */
  label: string;
  /** Nodes it owns. */
  value: number;
  /** Its share of the group (0–1) as shown. */
  share: number;
}

const fixed = (n: number): string => n.toFixed(2);

/** Cuts a label for the drawing; the whole text is in the titles and tables. */
function cut(text: string, max = 18): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function point(cx: number, cy: number, r: number, angle: number): [number, number] {
  return [cx + r * Math.sin(angle), cy - r * Math.cos(angle)];
}

/** An annulus sector from angle a0 to a1 (radians, clockwise from 12 o'clock). */
function arcPath(cx: number, cy: number, outer: number, inner: number, a0: number, a1: number): string {
  // A full circle cannot be one arc: draw it as two halves.
  if (a1 - a0 >= Math.PI * 2 - 1e-9) return `${arcPath(cx, cy, outer, inner, a0, a0 + Math.PI)} ${arcPath(cx, cy, outer, inner, a0 + Math.PI, a1)}`;
  const large = a1 - a0 > Math.PI ? 1 : 0;
  const [x0, y0] = point(cx, cy, outer, a0);
  const [x1, y1] = point(cx, cy, outer, a1);
  const [x2, y2] = point(cx, cy, inner, a1);
  const [x3, y3] = point(cx, cy, inner, a0);
  return `M${fixed(x0)} ${fixed(y0)} A${outer} ${outer} 0 ${large} 1 ${fixed(x1)} ${fixed(y1)} L${fixed(x2)} ${fixed(y2)} A${inner} ${inner} 0 ${large} 0 ${fixed(x3)} ${fixed(y3)} Z`;
}

/**
 * A conductor group as a ring: one arc per live conductor, sized by `share`, labelled with its
 * name, node count and percentage. `id` makes the title and description ids unique on the page.
 */
export function ringDiagram(options: { id: string; title: string; segments: readonly RingSegment[]; centre: string }): Html {
  const { id, segments } = options;
  const cx = 240;
  const cy = 170;
  const outer = 105;
  const inner = 68;
  const total = segments.reduce((s, x) => s + x.share, 0);
  let angle = 0;
  const arcs: Html[] = [];
  const labels: Html[] = [];
  segments.forEach((seg, i) => {
    const span = total > 0 ? (seg.share / total) * Math.PI * 2 : 0;
    const a0 = angle;
    const a1 = angle + span;
    angle = a1;
    const colour = PALETTE[i % PALETTE.length]!;
    const words = `${seg.label}: ${seg.value} nodes, ${(seg.share * 100).toFixed(1)} %`;
    if (span > 0) {
      arcs.push(html`<path d="${arcPath(cx, cy, outer, inner, a0, a1)}" fill="${colour}" stroke="currentColor" stroke-width="${segments.length > 1 ? 1 : 0}"><title>${words}</title></path>`);
    }
    const mid = segments.length === 1 ? 0 : (a0 + a1) / 2;
    const [lx, at] = point(cx, cy, outer + 14, mid);
    // A label above the ring grows upwards: its second line must not cross the ring.
    const ly = at < cy - outer / 2 ? at - 14 : at;
    const anchor = Math.abs(lx - cx) < 8 ? 'middle' : lx > cx ? 'start' : 'end';
    labels.push(html`<text x="${fixed(lx)}" y="${fixed(ly)}" text-anchor="${anchor}" fill="currentColor" font-size="12"><tspan x="${fixed(lx)}" font-weight="bold">${cut(seg.label, 16)}</tspan><tspan x="${fixed(lx)}" dy="14">${seg.value} · ${(seg.share * 100).toFixed(1)} %</tspan></text>`);
  });
  if (segments.length === 0) {
    arcs.push(html`<circle cx="${cx}" cy="${cy}" r="${(outer + inner) / 2}" fill="none" stroke="currentColor" stroke-width="${outer - inner}" stroke-opacity="0.15"/>`);
  }
  const desc = segments.length === 0 ? 'No live conductor.' : segments.map((s) => `${s.label} ${s.value} nodes (${(s.share * 100).toFixed(1)} %)`).join('; ');
  return html`<svg class="ring-diagram" viewBox="0 0 480 340" width="480" height="340" role="img" aria-labelledby="${id}-t ${id}-d" xmlns="http://www.w3.org/2000/svg">
<title id="${id}-t">${options.title}</title>
<desc id="${id}-d">${desc}</desc>
${arcs}
<text x="${cx}" y="${cy + 5}" text-anchor="middle" fill="currentColor" font-size="14">${cut(options.centre, 22)}</text>
${labels}
</svg>`;
}

/** A ring event on the timeline. */
export interface TimelineMark {
  at: Date;
  /** `joined`, `left`, `died`. */
  kind: string;
  hostname: string;
}

/** A reconcile pass on the timeline: it ended at `at` after `durationMs`. */
export interface TimelinePass {
  at: Date;
  durationMs: number;
  nodesMoved: number;
  hostname: string;
  pending: number;
}

const MARK_GLYPH: Readonly<Record<string, string>> = { joined: '+', left: '−', died: '✕' };

function clock(at: Date): string {
  return at.toISOString().slice(11, 19);
}

/** Tick steps of the time axis (seconds): whole, round amounts, so labels of whole seconds never mislead. */
const TICK_STEPS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21_600, 43_200, 86_400];

/** Times of the axis ticks between `t0` and `t1` (ms): multiples of the smallest round step giving at most 6. */
export function timeTicks(t0: number, t1: number): number[] {
  const stepMs = 1000 * (TICK_STEPS_S.find((s) => (t1 - t0) / (s * 1000) <= 6) ?? Math.ceil((t1 - t0) / 6000));
  const out: number[] = [];
  for (let t = Math.ceil(t0 / stepMs) * stepMs; t <= t1; t += stepMs) out.push(t);
  return out;
}

/**
 * The take-over timeline from `from` to `to`: ring events as vertical lines labelled with what
 * happened to whom (+ joined, − left, ✕ died), passes as bars from start to end whose height is the
 * number of nodes they took over.
 */
export function timelineChart(options: { id: string; from: Date; to: Date; marks: readonly TimelineMark[]; passes: readonly TimelinePass[] }): Html {
  const { id, marks, passes } = options;
  const width = 900;
  const height = 300;
  const left = 56;
  const right = 20;
  const top = 70;
  const bottom = 40;
  const t0 = options.from.getTime();
  const t1 = Math.max(options.to.getTime(), t0 + 1000);
  const x = (at: number): number => left + ((at - t0) / (t1 - t0)) * (width - left - right);
  const plotBottom = height - bottom;
  const maxMoved = Math.max(1, ...passes.map((p) => p.nodesMoved));
  const y = (n: number): number => plotBottom - (n / maxMoved) * (plotBottom - top);
  const tickAnchor = (tx: number): string => (tx > width - right - 30 ? 'end' : tx < left + 30 ? 'start' : 'middle');
  const axis = html`<line x1="${left}" y1="${plotBottom}" x2="${width - right}" y2="${plotBottom}" stroke="currentColor"/>
<line x1="${left}" y1="${top}" x2="${left}" y2="${plotBottom}" stroke="currentColor"/>
${timeTicks(t0, t1).map((t) => {
  const tx = fixed(x(t));
  return html`<line x1="${tx}" y1="${plotBottom}" x2="${tx}" y2="${plotBottom + 4}" stroke="currentColor"/><text x="${tx}" y="${plotBottom + 16}" text-anchor="${tickAnchor(x(t))}" fill="currentColor" font-size="11">${clock(new Date(t))}</text>`;
})}
<text x="${left - 6}" y="${top + 4}" text-anchor="end" fill="currentColor" font-size="11">${maxMoved}</text>
<text x="${left - 6}" y="${plotBottom}" text-anchor="end" fill="currentColor" font-size="11">0</text>
<text x="${left}" y="${height - 6}" fill="currentColor" font-size="11">time (UTC) → · bar height: nodes taken over by a pass</text>`;
  const markEls = marks.map((m, i) => {
    const mx = fixed(x(m.at.getTime()));
    const row = i % 3;
    const colour = m.kind === 'joined' ? '#2e9e5b' : m.kind === 'died' ? '#c9453a' : '#d9822b';
    const words = `${m.hostname} ${m.kind} at ${clock(m.at)}`;
    return html`<g><title>${words}</title><line x1="${mx}" y1="${top - 6}" x2="${mx}" y2="${plotBottom}" stroke="${colour}" stroke-width="2" stroke-dasharray="${m.kind === 'died' ? '2 3' : m.kind === 'left' ? '6 3' : 'none'}"/>
<text x="${mx}" y="${14 + row * 17}" text-anchor="middle" fill="currentColor" font-size="12">${MARK_GLYPH[m.kind] ?? '•'} ${cut(m.hostname, 16)} ${m.kind}</text></g>`;
  });
  const passEls = passes.map((p) => {
    const end = x(p.at.getTime());
    const start = Math.max(left, x(p.at.getTime() - p.durationMs));
    const w = Math.max(3, end - start);
    const barTop = y(p.nodesMoved);
    const words = `${p.hostname}: pass of ${Math.round(p.durationMs)} ms ending ${clock(p.at)}, ${p.nodesMoved} nodes taken over, ${p.pending} pending`;
    return html`<rect x="${fixed(end - w)}" y="${fixed(Math.min(barTop, plotBottom - 2))}" width="${fixed(w)}" height="${fixed(Math.max(2, plotBottom - barTop))}" fill="#2f6fd6" stroke="currentColor" stroke-width="0.5"><title>${words}</title></rect>`;
  });
  const moved = passes.reduce((s, p) => s + p.nodesMoved, 0);
  const desc = `${marks.length} ring events and ${passes.length} reconcile passes between ${clock(options.from)} and ${clock(options.to)} UTC; the passes took over ${moved} nodes in all.`;
  return html`<svg class="timeline-chart" viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-labelledby="${id}-t ${id}-d" xmlns="http://www.w3.org/2000/svg">
<title id="${id}-t">Take-over timeline</title>
<desc id="${id}-d">${desc}</desc>
${axis}
${join(passEls)}
${join(markEls)}
</svg>`;
}
