"""HTTP plumbing shared by every resource: routes + OpenAPI, body/query parsing, middlewares."""
