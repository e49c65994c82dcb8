"""Zoom integration: OAuth connections of workspace users and on-behalf-of token minting."""
