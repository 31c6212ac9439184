// Runs before each test file of the db, e2e and soak tiers: their `memory://` databases start from the templates
// test/global-setup.ts made, instead of running initdb each time (test/helpers/pglite-template.ts).
import { inject } from 'vitest';
import { useTemplates } from './helpers/pglite-template.js';

useTemplates(inject('pgliteTemplates'));
