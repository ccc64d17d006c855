/**
 * The README and docs/ as a newcomer follows them alone: every table renders, every link leads to a file and a
 * heading that exist, every command works as pasted (no tool the project does not put on PATH), the Node version
 * is the one package.json asks for, and the README's map names every document.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOCS = readdirSync(join(ROOT, 'docs'))
  .filter((file) => file.endsWith('.md'))
  .map((file) => `docs/${file}`);
const FILES = ['README.md', ...DOCS, 'sandbox/README.md', 'bench/README.md'];
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');
/** Markdown outside fenced code blocks, as [line number, text] pairs. */
function proseLines(markdown: string): Array<[number, string]> {
  const lines: Array<[number, string]> = [];
  let fenced = false;
  markdown.split('\n').forEach((line, index) => {
    if (/^```/.test(line)) fenced = !fenced;
    else if (!fenced) lines.push([index + 1, line]);
  });
  return lines;
}

/** GFM splits a row on every unescaped pipe, inside code spans too, so that is what counts. */
const cellCount = (row: string): number =>
  row
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split(/(?<!\\)\|/).length;

/** GitHub's anchors of a file's headings (duplicates get -1, -2, …). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, line] of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.+?)\s*$/.exec(line)?.[1];
    if (!heading) continue;
    const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count ? `${base}-${count}` : base);
  }
  return result;
}

describe.each(FILES)('%s', (file) => {
  const markdown = read(file);
  const proseLineNumbers = new Set(proseLines(markdown).map(([line]) => line));

  test('every table renders: a header, a delimiter row and rows with as many cells, set off by blank lines', () => {
    const tables: Array<Array<[number, string]>> = [];
    let previous: [number, string] | undefined;
    for (const entry of proseLines(markdown)) {
      if (entry[1].trimStart().startsWith('|')) {
        const last = tables.at(-1);
        if (last && previous && last.at(-1) === previous) last.push(entry);
        else {
          expect({ line: entry[0], before: previous?.[1].trim() ?? '' }).toEqual({ line: entry[0], before: '' });
          tables.push([entry]);
        }
      }
      previous = entry;
    }
    for (const table of tables) {
      const [header, delimiter, ...rows] = table;
      expect({ line: header?.[0], delimiter: delimiter?.[1] }).toEqual({
        line: header?.[0],
        delimiter: expect.stringMatching(/^\|(\s*:?-+:?\s*\|)+\s*$/),
      });
      const width = cellCount(header?.[1] ?? '');
      for (const [line, row] of [delimiter, ...rows].filter((entry) => entry !== undefined)) {
        expect({ line, cells: cellCount(row) }).toEqual({ line, cells: width });
      }
    }
  });

  test('every relative link leads to a file, and to a heading of it', () => {
    const broken: string[] = [];
    for (const [line, text] of proseLines(markdown)) {
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const [path = '', anchor] = target.split('#');
        const resolved = path ? normalize(relative(ROOT, join(ROOT, dirname(file), path))) : file;
        if (!existsSync(join(ROOT, resolved))) {
          broken.push(`${file}:${line} ${target} (no file)`);
          continue;
        }
        if (anchor && resolved.endsWith('.md') && !anchors(read(resolved)).has(anchor)) {
          broken.push(`${file}:${line} ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  test('commands work as pasted: no tool the project does not put on PATH', () => {
    // npm puts node_modules/.bin on PATH for its scripts and npx only: typed bare, these are "command not found".
    const bare = /^(?:\$\s*)?(temporal|tsx|jest|biome|tsc|ticketing)\s/;
    const offending: string[] = [];
    let fenced = false;
    markdown.split('\n').forEach((line, index) => {
      if (/^```/.test(line)) fenced = !fenced;
      else if (fenced && bare.test(line.trim())) offending.push(`${file}:${index + 1} ${line.trim()}`);
    });
    // Code spans may wrap onto the next line: search the prose as one text, fenced lines blanked.
    const prose = markdown
      .split('\n')
      .map((line, index) => (proseLineNumbers.has(index + 1) ? line : ''))
      .join('\n');
    for (const span of prose.matchAll(/`([^`]+)`/g)) {
      const code = span[1]!.replace(/\s+/g, ' ');
      const line = prose.slice(0, span.index).split('\n').length;
      if (bare.test(code)) offending.push(`${file}:${line} \`${code}\``);
    }
    expect(offending).toEqual([]);
  });
});

describe('README.md', () => {
  const readme = read('README.md');

  test('asks for the Node version package.json asks for', () => {
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
    const wanted = /^>=\s*(\d+\.\d+)/.exec(engines)?.[1];
    expect(wanted).toBeDefined();
    const stated = [...readme.matchAll(/Node ≥ (\d+(?:\.\d+)?)/g)].map((match) => match[1]);
    expect(stated.length).toBeGreaterThan(0);
    expect(new Set(stated)).toEqual(new Set([wanted]));
  });

  test('maps every document in docs/', () => {
    for (const doc of DOCS) expect({ doc, linked: readme.includes(`](${doc})`) }).toEqual({ doc, linked: true });
  });

  test('stays a first read: the reference lives in docs/', () => {
    expect(Buffer.byteLength(readme)).toBeLessThan(20_000);
  });
});

describe('docs/api-guide.md', () => {
  test('says that cancelling an event cancels complimentary and box-office sales rather than refunding them', () => {
    const guide = read('docs/api-guide.md');
    const section = guide.slice(guide.indexOf('## Cancelling an event'), guide.indexOf('## Organizer webhooks'));
    expect(section).toMatch(/complimentary[^\n]*\*\*CANCELLED, not refunded\*\*/);
    expect(section).toMatch(/box office[^\n]*\*\*CANCELLED, not refunded\*\*/);
  });
});
