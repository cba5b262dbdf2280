/**
 * The page shell every dashboard page shares: a skip link, the navigation (the current page marked
 * with `aria-current`, not only by colour), the page's title and body, the stylesheet (light and
 * dark from the system setting) and htmx with its SSE extension. Pages are whole documents that
 * read without JavaScript; htmx only refreshes parts of them.
 */
import { html } from './html.js';
import type { Html } from './html.js';

export type NavKey = 'ring' | 'conductors' | 'nodes' | 'timeline' | 'compute';

const NAV: ReadonlyArray<readonly [NavKey, string, string]> = [
  ['ring', 'Ring', '/ui/ring'],
  ['conductors', 'Conductors', '/ui/conductors'],
  ['nodes', 'Nodes', '/ui/nodes'],
  ['timeline', 'Take-over timeline', '/ui/timeline'],
  ['compute', 'Compute', '/ui/compute'],
];

export interface PageOptions {
  /** The document's title and the page's heading. */
  title: string;
  /** The navigation entry this page belongs to. */
  nav: NavKey;
  body: Html;
  /**
   * Whether the page opens the event stream (`/ui/events`) for its live fragments (default true);
   * elements inside use `liveAttrs` (src/web/sse.ts).
   */
  live?: boolean;
}

/** A whole HTML document. */
export function page({ title, nav, body, live = true }: PageOptions): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${title} · ironring</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/static/style.css">
<script src="/ui/static/htmx.min.js" defer></script>
<script src="/ui/static/htmx-ext-sse.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
<nav aria-label="Main">
<a class="brand" href="/">ironring</a>
<ul>
${NAV.map(([key, label, href]) => html`<li><a href="${href}"${key === nav ? html` aria-current="page"` : ''}>${label}</a></li>`)}
</ul>
</nav>
</header>
<main id="main" tabindex="-1"${live ? html` hx-ext="sse" sse-connect="/ui/events"` : ''}>
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`;
}
