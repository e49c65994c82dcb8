"""The bot's browser: Playwright driving Debian's Chromium, with meetbot's in-page script."""
