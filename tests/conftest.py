"""The test suite's plugins: shared fixtures live in ``tests/plugins/``, not in conftests.

Test modules import helpers and types from those plugin modules, never from a conftest.
"""

pytest_plugins = (
    "tests.plugins.categories",
    "tests.plugins.paths",
    "tests.plugins.api_app",
    "tests.plugins.agent_link",
    "tests.plugins.webhooks",
    "tests.plugins.exit_watchdog",
)
