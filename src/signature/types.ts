/** Request headers with lower-case names; a header may repeat (string[]). */
export type HeaderMap = Readonly<Record<string, string | readonly string[] | undefined>>;

/** What {@link SignatureScheme.verify} checks. */
export interface VerifyInput {
  headers: HeaderMap;
  /** The exact bytes received. */
  rawBody: Uint8Array;
  /** The current time in ms since the epoch (or a Date). Default `Date.now()`. */
  now?: Date | number | undefined;
}

/** What a successful verification tells. */
export interface VerifiedDelivery {
  /** The delivery's timestamp, unix seconds. */
  timestamp: number;
  /** The delivery id header, for schemes that have one. */
  webhookId?: string | undefined;
  /** Which configured secret matched (0 = the first), useful to see when a rotation is complete. */
  matchedSecretIndex: number;
}

/** What {@link SignatureScheme.sign} signs. */
export interface SignInput {
  rawBody: Uint8Array | string;
  /** Unix seconds. Default now. */
  timestamp?: number | undefined;
  /** The delivery id, for schemes that sign one. Default a random id. */
  webhookId?: string | undefined;
  /** The secret to sign with. Default the first configured. */
  secret?: string | undefined;
}

/** A way of signing deliveries: the default scheme, Standard Webhooks, or one built with `createHmacScheme`. */
export interface SignatureScheme {
  readonly name: string;
  /** Lower-case names of the headers this scheme reads (the receiver keeps them with the event). */
  readonly headerNames: readonly string[];
  /** Checks a delivery; throws {@link WebhookVerificationError} when it does not pass. */
  verify(input: VerifyInput): VerifiedDelivery;
  /** The headers to send with `rawBody` (tests, the simulator and `payhooks trigger` use it). */
  sign(input: SignInput): Record<string, string>;
}
