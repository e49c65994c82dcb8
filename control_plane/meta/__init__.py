"""Meta routes: health, readiness, metrics and the OpenAPI document."""
