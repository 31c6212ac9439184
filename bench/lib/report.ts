/** One section of bench/results.md: a heading, what was measured, a table, and the targets with met or missed. */
export interface Section {
  title: string;
  about: string;
  header: string[];
  rows: string[][];
  targets: { text: string; met: boolean }[];
  notes?: string[];
}

/** A section as markdown, under its `## title`, with a line that says when and how it was measured. */
export function renderSection(section: Section, measured: string): string {
  const lines = [`## ${section.title}`, '', `_${measured}_`, '', section.about, ''];
  lines.push(`| ${section.header.join(' | ')} |`, `|${section.header.map(() => '---').join('|')}|`);
  for (const row of section.rows) lines.push(`| ${row.join(' | ')} |`);
  lines.push('');
  if (section.targets.length > 0) {
    lines.push('Targets:', '');
    for (const target of section.targets) lines.push(`- ${target.met ? 'met' : '**missed**'}: ${target.text}`);
    lines.push('');
  }
  for (const note of section.notes ?? []) lines.push(note, '');
  return lines.join('\n');
}
