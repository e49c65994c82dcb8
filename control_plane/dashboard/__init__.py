"""The web dashboard: static HTML, CSS and ES modules that drive the public API from the browser."""
