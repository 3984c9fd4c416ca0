import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as keys from '../../functions/store/keys.js';

/**
 * The docs stay a map a newcomer can trust: pages describe the code as it is (no work history,
 * no citations of files outside the repository), stay short, link only to what exists, and the
 * DynamoDB layout names every key the code builds. CHANGELOG.md is where history goes.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CODE_DIRS = ['functions', 'infra', 'client', 'cli', 'console', 'bench', 'chaos', 'test', 'scripts'];
const CODE_EXTENSIONS = new Set(['.ts', '.mts', '.mjs', '.js']);
const MAX_PAGE_LINES = 250;

/** A tracker's numbers, a chaos seed, or a document outside the repository. */
const HISTORY: readonly [string, RegExp][] = [
  ['a tracker reference', /\b(stop|issue|defect)s? #?\d+/i],
  ['a seed', /\bseeds? \d+/i],
  ['a file outside the repository', /\b(API|DESIGN|EMULATORS|LAYOUT)\.md\b|\bDESIGN §|\.\.\/shared\//],
  ['the removed architecture page', /docs\/architecture\.md/],
];

/** 7-40 hex digits with a digit and a letter: how a commit hash looks in prose. */
const COMMIT_HASH = /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b/;

/**
 * Hex tokens in comments that are data, not commits: `file: token`. Kept explicit and small;
 * anything else that looks like a hash is taken for one.
 */
const HEX_ALLOWED = new Set<string>([]);

function files(dir: string, keep: (path: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'dist') out.push(...files(path, keep));
    } else if (keep(path)) out.push(path);
  }
  return out;
}

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const docPages = files('docs', (p) => p.endsWith('.md'));
const prose = [...docPages, 'README.md'];

/** The comments of a source file, and the strings of a test's names and messages. */
function commentsAndStrings(path: string): { comments: string[]; strings: string[] } {
  const text = read(path);
  const kind = extname(path) === '.ts' || extname(path) === '.mts' ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
  const seen = new Set<number>();
  const comments: string[] = [];
  const strings: string[] = [];
  const collect = (ranges: ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue;
      seen.add(r.pos);
      comments.push(text.slice(r.pos, r.end));
    }
  };
  const visit = (node: ts.Node) => {
    collect(ts.getLeadingCommentRanges(text, node.pos));
    collect(ts.getTrailingCommentRanges(text, node.end));
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateLiteralToken(node)
    )
      strings.push(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  collect(ts.getLeadingCommentRanges(text, source.endOfFileToken.pos));
  return { comments, strings };
}

function historyIn(text: string): string | undefined {
  for (const [what, pattern] of HISTORY) {
    const found = pattern.exec(text);
    if (found) return `${what}: "${found[0]}"`;
  }
  return undefined;
}

/** GitHub's anchor of a heading: its text lowercased, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');
}

function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  const counts = new Map<string, number>();
  for (const line of withoutCodeBlocks(markdown).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1] as string);
    const n = counts.get(base) ?? 0;
    counts.set(base, n + 1);
    found.add(n === 0 ? base : `${base}-${n}`);
  }
  return found;
}

function withoutCodeBlocks(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '');
}

describe('the docs', () => {
  it('carry no work history and cite no file outside the repository', () => {
    const found: string[] = [];
    for (const page of prose) {
      read(page)
        .split('\n')
        .forEach((line, i) => {
          const history =
            historyIn(line) ?? (COMMIT_HASH.exec(line) && `a commit hash: "${COMMIT_HASH.exec(line)?.[0]}"`);
          if (history) found.push(`${page}:${i + 1}: ${history}`);
        });
    }
    expect(found, 'say what the code does and why; history goes to CHANGELOG.md').toEqual([]);
  });

  it('keep every page short', () => {
    expect(docPages.length).toBeGreaterThan(10);
    const long = docPages
      .map((page) => ({ page, lines: read(page).split('\n').length - 1 }))
      .filter((p) => p.lines > MAX_PAGE_LINES)
      .map((p) => `${p.page}: ${p.lines} lines`);
    expect(long, `a page is at most ${MAX_PAGE_LINES} lines: split it`).toEqual([]);
  });

  it('link only to files and headings that exist', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of prose) {
      const text = withoutCodeBlocks(read(page));
      for (const link of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = link[1] as string;
        if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
        checked += 1;
        const [path = '', anchor] = target.split('#');
        const file = path === '' ? join(ROOT, page) : resolve(ROOT, dirname(page), path);
        if (!existsSync(file)) {
          broken.push(`${page}: ${target} (no such file)`);
          continue;
        }
        if (anchor !== undefined && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(anchor))
          broken.push(`${page}: ${target} (no such heading in ${relative(ROOT, file)})`);
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(broken).toEqual([]);
  });

  it('name every key builder of functions/store/keys.ts in docs/dynamodb-layout.md', () => {
    const layout = read('docs/dynamodb-layout.md');
    const names = [
      ...Object.keys(keys).filter((name) => name !== 'gsi'),
      ...Object.keys(keys.gsi).map((member) => `gsi.${member}`),
    ];
    expect(names.length).toBeGreaterThan(30);
    const missing = names.filter((name) => !layout.includes(`\`${name}\``));
    expect(missing, 'add a row (or a mention) for each to docs/dynamodb-layout.md').toEqual([]);
  });
});

describe('comments in the code and tests', () => {
  const sources = CODE_DIRS.flatMap((dir) => files(dir, (p) => CODE_EXTENSIONS.has(extname(p))));

  it('say what the code does, not when or by whom it was found, and cite docs/ pages', () => {
    expect(sources.length).toBeGreaterThan(300);
    const found: string[] = [];
    for (const path of sources) {
      const { comments, strings } = commentsAndStrings(path);
      for (const comment of comments) {
        const history = historyIn(comment);
        if (history) found.push(`${path}: ${history}`);
        for (const hash of comment.match(new RegExp(COMMIT_HASH, 'g')) ?? [])
          if (!HEX_ALLOWED.has(`${path}: ${hash}`)) found.push(`${path}: a commit hash: "${hash}"`);
      }
      // Test names and printed text: the same rule, but not for hex, which is data in strings.
      for (const text of strings) {
        const history = historyIn(text);
        if (history) found.push(`${path}: in a string, ${history}`);
      }
    }
    expect(found, 'history goes to CHANGELOG.md; the contract is docs/contract.md').toEqual([]);
  });
});
