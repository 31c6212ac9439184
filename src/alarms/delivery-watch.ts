/**
 * What the receiver's answers say about the sender, for the silence and signature checks: the newest authentic
 * delivery (stored, a duplicate of a stored event, or quarantined: signed but not storable) and the signature refusals since. Fed one call per answered
 * delivery (the `outcome` of the receiver's `DeliveryObservation`).
 *
 * @example
 * const watch = new DeliveryWatch();
 * const hooks = createPayhooks({ secret, observe: { delivery: (d) => watch.delivery(d) } });
 */
export class DeliveryWatch {
  lastAuthenticAt: Date | null = null;
  signatureFailuresInARow = 0;
  lastSignatureFailureAt: Date | null = null;

  /** One answered delivery; `now` for tests. */
  delivery({ outcome }: { outcome: string }, now = new Date()): void {
    if (outcome === 'stored' || outcome === 'duplicate' || outcome === 'quarantined') {
      this.lastAuthenticAt = now;
      this.signatureFailuresInARow = 0;
    } else if (outcome === 'rejected') {
      this.signatureFailuresInARow++;
      this.lastSignatureFailureAt = now;
    }
    // Other refusals (a bad body, storage unavailable) say nothing about the secret or about the sender's silence.
  }
}
