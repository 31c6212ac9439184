import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Examples import `payhooks` as users do; in this repository that means the sources, not a build that may be stale.
const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^payhooks$/, replacement: source('./src/index.ts') },
      { find: /^payhooks\/(client|sync|service|simulator|testing)$/, replacement: source('./src/$1/index.ts') },
      { find: /^payhooks\/handlers\/direct-debit$/, replacement: source('./handlers/direct-debit/index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
