"""Remote meeting audio captured in the page, delivered to Python as ``AudioFrame``s."""
