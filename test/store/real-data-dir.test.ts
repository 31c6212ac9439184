import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { realDataDir } from '../../src/store/real-data-dir.js';

// realpath of the temporary folder itself: on some systems it lies behind a link (/tmp -> /private/tmp).
const dir = realDataDir(mkdtempSync(join(tmpdir(), 'payhooks-realdir-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
mkdirSync(join(dir, 'real', 'inner'), { recursive: true });
mkdirSync(join(dir, 'real', 'pgdata'));
mkdirSync(join(dir, 'sub'));
symlinkSync('real', join(dir, 'link')); // link -> real
symlinkSync(join('real', 'inner'), join(dir, 'deep')); // deep -> real/inner
symlinkSync(join('real', 'later'), join(dir, 'dangling')); // to a folder not created yet
symlinkSync('loop2', join(dir, 'loop1'));
symlinkSync('loop1', join(dir, 'loop2'));

describe('realDataDir: one name for a folder, whichever name it is given by', () => {
  const pgdata = join(dir, 'real', 'pgdata');

  it('follows symbolic links, relative to the given working directory or absolute', () => {
    expect(realDataDir('real/pgdata', dir)).toBe(pgdata);
    expect(realDataDir('link/pgdata', dir)).toBe(pgdata);
    expect(realDataDir(join(dir, 'link', 'pgdata'), '/')).toBe(pgdata);
    expect(realDataDir('link/pgdata/', dir)).toBe(pgdata);
    expect(realDataDir('./link/./pgdata', dir)).toBe(pgdata);
  });

  it('applies `..` as the file system does: after a link, to the parent of its target', () => {
    expect(realDataDir('../link/pgdata', join(dir, 'sub'))).toBe(pgdata);
    expect(realDataDir('deep/../pgdata', dir)).toBe(pgdata); // not dir/pgdata, as the text alone would say
  });

  it('names a folder not created yet by its nearest existing parent, the same before and after it exists', () => {
    const before = realDataDir('link/new/pgdata', dir);
    expect(before).toBe(join(dir, 'real', 'new', 'pgdata'));
    mkdirSync(join(dir, 'real', 'new', 'pgdata'), { recursive: true });
    expect(realDataDir('link/new/pgdata', dir)).toBe(before);
    expect(realDataDir('link/not-yet/../pgdata', dir)).toBe(pgdata);
  });

  it('follows a link to a folder not created yet to where the folder will be', () => {
    expect(realDataDir('dangling', dir)).toBe(join(dir, 'real', 'later'));
    expect(realDataDir('dangling/pgdata', dir)).toBe(join(dir, 'real', 'later', 'pgdata'));
  });

  it('refuses a loop of links, naming the folder as given', () => {
    expect(() => realDataDir('loop1/pgdata', dir)).toThrow(
      /Cannot find the real path of the embedded database folder loop1\/pgdata: ELOOP/,
    );
  });
});
