"""The meeting: one bot's life in it, from launch to exit.

``bot`` (the lifecycle driver), ``lifecycle`` (status machine and meeting timers), ``watch``
(participants, speakers, chat), ``watchdog`` (end, denial and lost-page screens), ``commands``
(the control plane's commands) and ``live_settings`` (``update_settings``).
"""
