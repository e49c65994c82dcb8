"""Meeting intelligence: live action detection and the end-of-meeting summary.

Runs in ``meetbot serve`` over the final segments already stored; one language model per
replica (or an OpenAI-compatible endpoint) serves every meeting through :mod:`.chat`.
"""
