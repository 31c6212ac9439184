// Lists every function in src/ longer than 150 lines, from the line it is declared on to the line it ends on, nested
// ones too: a function that long does several jobs that could each have a name (issue 47). test/long-functions.test.ts
// holds the source to the list; oxc-parser reads the TypeScript because the compiler (version 7) has no JavaScript API.
//
//   npm run long-functions [-- --max N] [DIR]      (exit 1 when it lists any)
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseSync, type PropertyKey, Visitor } from 'oxc-parser';

/** The longest a function in src/ may be. */
export const MAX_FUNCTION_LINES = 150;

/** A function over the limit: where it starts, what it is called, how many lines it spans. */
export interface LongFunction {
  file: string;
  line: number;
  name: string;
  lines: number;
}

const root = fileURLToPath(new URL('..', import.meta.url));

function typescriptFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return typescriptFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The 1-based line of each offset, by a table of where lines start. */
function lineOf(text: string): (offset: number) => number {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1);
  return (offset) => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((starts[mid] as number) <= offset) low = mid;
      else high = mid - 1;
    }
    return low + 1;
  };
}

interface Span {
  start: number;
  end: number;
}
interface Named extends Span {
  name: string;
}

/**
 * The functions of one file's text longer than `max` lines. A function bound to a name (`const f = () => …`, a
 * method, an object's property) is measured from that name's declaration, which is where a reader starts.
 */
export function longFunctionsIn(file: string, text: string, max = MAX_FUNCTION_LINES): LongFunction[] {
  const { program, errors } = parseSync(file, text);
  if (errors.length > 0) throw new Error(`${file}: cannot be parsed: ${errors[0]?.message}`);
  const line = lineOf(text);
  const found: Named[] = [];
  /** Functions already measured from their binding, by their own start: not measured again from the function. */
  const bound = new Set<number>();
  const keep = (name: string, span: Span, fn: Span) => {
    bound.add(fn.start);
    found.push({ name, start: span.start, end: fn.end });
  };
  const isFunction = (node: { type: string } | null | undefined): node is Span & { type: string } =>
    node?.type === 'ArrowFunctionExpression' || node?.type === 'FunctionExpression';
  const keyName = (key: PropertyKey) => {
    if (key.type === 'Identifier' || key.type === 'PrivateIdentifier') return key.name;
    return key.type === 'Literal' ? String(key.value) : '[computed]';
  };

  new Visitor({
    VariableDeclarator(node) {
      if (node.id.type === 'Identifier' && isFunction(node.init)) keep(node.id.name, node, node.init);
    },
    MethodDefinition(node) {
      keep(keyName(node.key), node, node.value);
    },
    Property(node) {
      if (isFunction(node.value)) keep(keyName(node.key), node, node.value);
    },
    FunctionDeclaration(node) {
      found.push({ name: node.id?.name ?? 'default', start: node.start, end: node.end });
    },
    FunctionExpression(node) {
      if (!bound.has(node.start)) found.push({ name: node.id?.name ?? '(anonymous function)', start: node.start, end: node.end });
    },
    ArrowFunctionExpression(node) {
      if (!bound.has(node.start)) found.push({ name: '(arrow function)', start: node.start, end: node.end });
    },
  }).visit(program);

  return found
    .map(({ name, start, end }) => ({ file, line: line(start), name, lines: line(end) - line(start) + 1 }))
    .filter((fn) => fn.lines > max)
    .sort((a, b) => a.line - b.line);
}

/** Every function under `dir` (default: src/) longer than `max` lines, by file and line. */
export function longFunctions(dir = join(root, 'src'), max = MAX_FUNCTION_LINES): LongFunction[] {
  return typescriptFiles(dir)
    .sort()
    .flatMap((path) => longFunctionsIn(relative(root, path), readFileSync(path, 'utf8'), max));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const maxAt = args.indexOf('--max');
  const max = maxAt >= 0 ? Number(args.splice(maxAt, 2)[1]) : MAX_FUNCTION_LINES;
  if (!Number.isSafeInteger(max) || max < 1) {
    console.error('long-functions: --max takes a whole number of lines, at least 1.');
    process.exitCode = 2;
  } else {
    const list = longFunctions(args[0] ? join(process.cwd(), args[0]) : undefined, max);
    for (const fn of list) console.log(`${fn.file}:${fn.line}  ${fn.name}  ${fn.lines} lines`);
    console.log(list.length === 0 ? `no function over ${max} lines` : `${list.length} functions over ${max} lines`);
    process.exitCode = list.length === 0 ? 0 : 1;
  }
}
