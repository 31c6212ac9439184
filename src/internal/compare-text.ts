/**
 * Orders two strings by UTF-16 code unit, the same in every process and locale (`localeCompare`'s order is not): for
 * sorts whose order must agree across processes (rows locked in one order) or runs (canonical JSON).
 *
 * @example
 * rows.sort((a, b) => compareText(a.id, b.id));
 */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
