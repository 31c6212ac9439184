import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EVENT_REFERENCE_PATH, renderEventReference } from '../../scripts/generate-event-reference.js';
import { EVENT_DATA_SCHEMAS, EVENT_TYPES, EXAMPLE_EVENTS } from '../../src/events/index.js';

const committed = readFileSync(EVENT_REFERENCE_PATH, 'utf8');
const generated = renderEventReference();

/** The body of the `## TYPE` section: from its heading to the next level-2 heading. */
function section(page: string, heading: string): string {
  const start = page.indexOf(`\n## ${heading}\n`);
  expect(start, `a "## ${heading}" section`).toBeGreaterThanOrEqual(0);
  const end = page.indexOf('\n## ', start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

describe('docs/event-reference.md', () => {
  it('is what the generator makes from the schemas today (run `npm run docs:events` after changing them)', () => {
    expect(committed).toBe(generated);
  });

  it('has a section for each of the 19 event types, in the catalog order, and a row for each in the overview', () => {
    expect(EVENT_TYPES).toHaveLength(19);
    const headings = [...generated.matchAll(/^## ([A-Z_]+)$/gm)].map((match) => match[1]);
    expect(headings).toEqual(EVENT_TYPES);
    for (const type of EVENT_TYPES) expect(generated).toContain(`| [\`${type}\`](#${type.toLowerCase()}) |`);
  });

  it("lists every top-level field of each type's data, and shows its example payload verbatim", () => {
    for (const type of EVENT_TYPES) {
      const body = section(generated, type);
      for (const field of Object.keys(EVENT_DATA_SCHEMAS[type].shape)) expect(body).toContain(`| \`${field}\` |`);
      expect(body).toContain(`\`\`\`json\n${JSON.stringify(EXAMPLE_EVENTS[type], null, 2)}\n\`\`\``);
    }
  });

  it('marks presence from the schema: required, optional and nullable fields are told apart', () => {
    const invoicePaid = section(generated, 'INVOICE_PAID');
    expect(invoicePaid).toContain('| `invoiceId` | string, not empty | required |');
    expect(invoicePaid).toContain('| `payment` | [Payment](#payment) | optional, nullable |');
    expect(invoicePaid).toContain('| `metadata` | array of [MetadataPair](#metadatapair) | optional, nullable |');
    const resources = section(generated, 'Resources');
    expect(resources).toContain('| `currency` | string: ISO 4217 code, upper case (`MXN`) | required |');
    expect(resources).toContain('| `expiryMonth` | integer | required |');
    // An object without a name of its own is expanded under a dotted path.
    expect(resources).toContain('| `group.name` | string | required |');
  });

  it('gives every linked resource a section of its own', () => {
    const links = new Set([...generated.matchAll(/\]\(#([a-z0-9_-]+)\)/g)].map((match) => match[1]));
    const anchors = new Set([...generated.matchAll(/^#{2,3} (.+)$/gm)].map((match) => match[1]!.toLowerCase()));
    for (const link of links) expect(anchors, `a heading for #${link}`).toContain(link);
  });
});
