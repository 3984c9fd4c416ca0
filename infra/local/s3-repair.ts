import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * s3rver stores an object as three files (`<key>._S3rver_object`, `.md5`, `._S3rver_metadata.json`)
 * and answers a put once the metadata file is written, last. A process killed during a put leaves
 * an object without that file, or with a truncated one: the put was never answered, so nobody
 * refers to it (a segment is put before any range names it), but s3rver lists a bucket by
 * reading every metadata file, and its HeadBucket lists: one unparsable file made every start
 * fail (a crash run, kill 86). Each start removes what a torn put left, before s3rver opens it.
 */

const OBJECT = '._S3rver_object';
const SIDECARS = ['._S3rver_object.md5', '._S3rver_metadata.json'];

/** Removes every object of torn puts under `root` (s3rver's folder); answers their paths. */
export function removeTornS3Puts(root: string): string[] {
  if (!existsSync(root)) return [];
  const removed: string[] = [];
  const visit = (dir: string) => {
    const names = readdirSync(dir, { withFileTypes: true });
    const files = new Set(names.filter((n) => n.isFile()).map((n) => n.name));
    for (const name of names) if (name.isDirectory()) visit(join(dir, name.name));
    const objects = new Set<string>();
    for (const file of files) {
      const suffix = [OBJECT, ...SIDECARS].find((s) => file.endsWith(s));
      if (suffix) objects.add(file.slice(0, -suffix.length));
    }
    for (const object of objects) {
      if (files.has(object + OBJECT) && parses(join(dir, `${object}${SIDECARS[1]}`))) continue;
      for (const suffix of [OBJECT, ...SIDECARS]) rmSync(join(dir, object + suffix), { force: true });
      removed.push(join(dir, object));
    }
  };
  visit(root);
  return removed;
}

function parses(file: string): boolean {
  try {
    JSON.parse(readFileSync(file, 'utf8'));
    return true;
  } catch {
    return false;
  }
}
