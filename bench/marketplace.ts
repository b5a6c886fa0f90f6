/** The marketplace listing the bench's paid servers are configured for; the load sends the same values. */
export const MARKETPLACE = { host: 'risk-readings.bench.example', secret: 'bench-proxy-secret' } as const;
