/** Dollars as "$0.00" (cents below a cent shown as "<$0.01"). */
export function formatUSD(v: number): string {
  if (v > 0 && v < 0.01) return '<$0.01';
  return `$${v.toFixed(2)}`;
}
