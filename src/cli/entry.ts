// The payhooks process: bin/payhooks.js runs this module from dist/, and serve starts its worker child from it
// (src/service/worker-process.ts), so that the child is payhooks whatever script started its parent.
import { runAndExit } from './main.js';

await runAndExit(process.argv.slice(2));
