"""The meeting: one bot's life in it, from launch to exit.

``bot`` (the state machine of one meeting, driving the parts ``agent.wiring`` built),
``lifecycle`` (status machine and meeting timers), ``stop`` (the first cause to end the
attendance), ``passcode`` (the platform's passcode prompt), ``watch`` (participants, speakers,
chat), ``watchdog`` (end, denial and lost-page screens), ``unknown_screens`` (screens no adapter
knows, reported with a screenshot), ``commands`` (the control plane's commands) and
``live_settings`` (``update_settings``).
"""
