import { readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, resolve, sep } from 'node:path';
import { PayhooksError } from '../errors.js';

/** Symbolic links followed at most, as the kernel's own limit (ELOOP) on Linux. */
const MAX_LINKS = 40;

/**
 * The one name of an embedded database folder, whatever name it was given by: absolute, every symbolic link
 * followed, `.` and `..` applied as the file system applies them (`link/..` is the parent of the link's target, not
 * the folder holding the link). Two names of one folder give the same answer, so its lock and serve's session file
 * are found whichever name a command is given. A folder that does not exist yet is named after its nearest existing
 * parent's real path, with the rest appended (and a dangling link is followed to where its target would be), so the
 * name is the same before and after the folder is created.
 *
 * @example
 * realDataDir('link/pgdata') // '/srv/app/real/pgdata' when link -> real
 */
export function realDataDir(dataDir: string, from: string = process.cwd()): string {
  // Not path.resolve: it would apply `..` to the text, before the links are followed.
  let head = isAbsolute(dataDir) ? dataDir : `${from}${sep}${dataDir}`;
  const tail: string[] = [];
  for (let links = 0; ; ) {
    try {
      // .native: the file system's own realpath(3). The JavaScript one applies `..` to the text first, as resolve does.
      return resolve(realpathSync.native(head), ...tail);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') {
        throw new PayhooksError(`Cannot find the real path of the embedded database folder ${dataDir}: ${PayhooksError.describe(err)}`, {
          cause: err,
        });
      }
    }
    const target = linkTarget(head);
    if (target !== undefined) {
      if (++links > MAX_LINKS) throw new PayhooksError(`Cannot follow the embedded database folder ${dataDir}: too many symbolic links.`);
      head = isAbsolute(target) ? target : `${dirname(head)}${sep}${target}`;
      continue;
    }
    const parent = dirname(head);
    if (parent === head) return resolve(head, ...tail);
    tail.unshift(basename(head));
    head = parent;
  }
}

/** Where a symbolic link at `path` points, or undefined when `path` is not one. */
function linkTarget(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}
