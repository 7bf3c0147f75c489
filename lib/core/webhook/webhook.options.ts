// The front door's resolved options live beside it; the client resolves them from its own options.

/** Webhook options after validation. `enabled` is true when publicUrl and secret are set. */
export interface ResolvedWebhookOptions {
  readonly enabled: boolean;
  readonly path: string;
  readonly publicUrl?: string;
  readonly secret?: string;
  /** Secrets still accepted for tokens minted before a rotation (none signs). */
  readonly previousSecrets: readonly string[];
  readonly acceptUnsigned: boolean;
  readonly unsignedIntervalSecs: number;
  readonly maxBodyBytes: number;
  readonly tokenTtlMs: number;
  readonly leaseMs: number;
  readonly doneTtlMs: number;
}
