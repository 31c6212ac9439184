import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The text of a Markdown page without its fenced code blocks, whose `#` lines and brackets are not Markdown. */
function prose(markdown: string): string {
  return markdown.replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** Inline links `[text](target)` outside code blocks and code spans. */
function linksOf(markdown: string): string[] {
  const text = prose(markdown).replace(/`+[^`\n]*`+/g, '');
  return [...text.matchAll(/\[[^\]\n]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1]!);
}

/**
 * The anchors GitHub makes for a page's headings: lower case, punctuation other than `-` and `_` removed, spaces
 * turned into `-`, and `-1`, `-2`… appended to repeats.
 */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of prose(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = heading!.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);

describe('links in README.md and docs/', () => {
  it('finds the pages and their links (the check below is not vacuous)', () => {
    expect(pages).toContain('README.md');
    expect(pages).toContain('docs/receiver.md');
    expect(linksOf(readFileSync(join(root, 'README.md'), 'utf8')).length).toBeGreaterThan(10);
  });

  it('makes GitHub-style anchors', () => {
    const anchors = anchorsOf('# The `payhooks` command\n## 401 Invalid webhook signature\n## Notes\n## Notes\n```\n# not a heading\n```');
    expect([...anchors]).toEqual(['the-payhooks-command', '401-invalid-webhook-signature', 'notes', 'notes-1']);
  });

  for (const page of pages) {
    it(`${page}: every relative link resolves to a file, and every #anchor to a heading of it`, () => {
      const broken: string[] = [];
      for (const target of linksOf(readFileSync(join(root, page), 'utf8'))) {
        if (isExternal(target)) continue;
        const [path = '', anchor] = target.split('#', 2);
        const file = path === '' ? join(root, page) : resolve(dirname(join(root, page)), decodeURIComponent(path));
        if (!file.startsWith(root) || !existsSync(file)) {
          broken.push(`${target}: no file ${relative(root, file)}`);
          continue;
        }
        if (anchor !== undefined && !(statSync(file).isFile() && anchorsOf(readFileSync(file, 'utf8')).has(anchor))) {
          broken.push(`${target}: no heading #${anchor} in ${relative(root, file)}`);
        }
      }
      expect(broken).toEqual([]);
    });
  }

  it('never points at DESIGN.md, which is not part of the repository: the contracts live in docs/', () => {
    for (const page of pages) {
      const text = readFileSync(join(root, page), 'utf8');
      expect(
        linksOf(text).filter((target) => /design\.md/i.test(target)),
        page,
      ).toEqual([]);
      expect(text, page).not.toMatch(/DESIGN\.md/);
    }
  });
});

describe('docs/ pages cited by the code', () => {
  const sources = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
    );

  it('exist, and no source file cites DESIGN.md', () => {
    const cited: string[] = [];
    for (const file of sources('src')) {
      const text = readFileSync(join(root, file), 'utf8');
      expect(text, file).not.toMatch(/DESIGN\.md/);
      for (const [page] of text.matchAll(/docs\/[a-z0-9-]+\.md/g)) {
        cited.push(page);
        expect(existsSync(join(root, page)), `${file} cites ${page}`).toBe(true);
      }
    }
    expect(cited.length).toBeGreaterThan(0);
  });
});
