/**
 * HTML written as tagged templates with escaping by default: every value put into `html\`…\`` is
 * escaped unless it is itself `Html` (made by `html`, `raw` or `join`). So text from the database or
 * from a request (a node's name, a last_error) can never become markup, and markup is only what
 * the code writes literally.
 *
 *   html`<td>${node.name}</td>`            // name escaped
 *   html`<ul>${items.map((i) => html`<li>${i}</li>`)}</ul>`   // arrays are joined
 */

const HTML = Symbol('html');

/** Markup that is safe to put into a page as it is. */
export interface Html {
  readonly [HTML]: true;
  readonly text: string;
}

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Text made safe for an element's content and for a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

export function isHtml(value: unknown): value is Html {
  return typeof value === 'object' && value !== null && (value as { [HTML]?: unknown })[HTML] === true;
}

const make = (text: string): Html => ({ [HTML]: true, text });

/** Markup from a trusted string (a literal of the code, never user data). */
export function raw(text: string): Html {
  return make(text);
}

/** One interpolated value: Html as it is, arrays joined, null/undefined/false as nothing, the rest escaped. */
function render(value: unknown): string {
  if (value === null || value === undefined || value === false) return '';
  if (isHtml(value)) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** The template tag: literal parts kept, every value escaped (see `render`). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return make(out);
}

/** Pieces joined by a separator (itself escaped unless Html). */
export function join(parts: readonly unknown[], separator: unknown = ''): Html {
  const sep = render(separator);
  return make(parts.map(render).join(sep));
}
