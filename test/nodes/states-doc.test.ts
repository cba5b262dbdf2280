import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderStateMachineMarkdown } from '../../src/nodes/state-machine.js';

describe('docs/states.md', () => {
  it('embeds the tables the machine renders, so the docs cannot drift from the code', () => {
    const doc = readFileSync(new URL('../../docs/states.md', import.meta.url), 'utf8');
    const tables = renderStateMachineMarkdown().trim().split('\n\n');
    expect(tables).toHaveLength(2);
    for (const table of tables) expect(doc).toContain(table);
  });
});
