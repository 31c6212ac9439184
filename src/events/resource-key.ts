function field(value: unknown, ...path: string[]): string | undefined {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return typeof current === 'string' && current.length > 0 ? current : undefined;
}

const prefixed = (kind: string, id: string | undefined) => (id ? `${kind}:${id}` : null);

/**
 * The key that orders an event among the events of its resource (`invoice:inv_1`, `payment:pay_1` …), or null.
 * Safe on unvalidated data: the receiver calls it before any schema check.
 *
 * PAYMENT_METHOD_CREATED is keyed by its customer: a method only matters as the customer's way to pay,
 * and ordering it with the customer's own events keeps "customer created" ahead of "method saved".
 *
 * @example
 * resourceKeyOf('INVOICE_PAID', { invoiceId: 'inv_1' }) // 'invoice:inv_1'
 */
export function resourceKeyOf(eventType: string, data: unknown): string | null {
  if (eventType.startsWith('INVOICE_')) return prefixed('invoice', field(data, 'invoiceId') ?? field(data, 'invoice', 'id'));
  if (eventType.startsWith('CUSTOMER_')) return prefixed('customer', field(data, 'id'));
  if (eventType.startsWith('PAYMENT_ATTEMPT_') || eventType === 'PAYMENT_COMPLETED' || eventType === 'PAYMENT_REFUNDED') {
    return prefixed('payment', field(data, 'payment', 'id'));
  }
  if (eventType === 'PAYMENT_METHOD_CREATED') return prefixed('customer', field(data, 'customer', 'id'));
  if (eventType.startsWith('DISPUTE_')) return prefixed('dispute', field(data, 'dispute', 'id'));
  if (eventType.startsWith('SUBSCRIPTION_')) return prefixed('subscription', field(data, 'subscription', 'id'));
  return null;
}
