"""Tests of the qemu launcher and the bot VM (category ``vm``)."""
