"""Action prompts (docs/api.md 2.9): versions per workspace (service) and their routes."""
