"""The agents this process can reach: open links, pending commands, their relay between replicas.

Below the resources that send commands (``bots``) and the link endpoint that feeds it
(``agent_link``): the hub, the cross-replica relay, link metrics, stream-token signing, the
errors of reaching an agent, and the app keys of these.
"""
