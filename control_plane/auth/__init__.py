"""Authentication and tenancy: API keys, the caller's identity, per-key rate limits."""
