"""Python side of rlpost's reward service (`rlpost serve`): a client and one
adapter per trainer. Scoring happens in the Go server only; this package
sends requests and reads answers.

    rlpost.Client, rlpost.AsyncClient   the client (client.py)
    rlpost.label                        OpenRLHF/slime dataset labels (labels.py)
    rlpost.trl                          TRL GRPOTrainer reward functions
    rlpost/verl_reward.py               verl custom_reward_function file (loaded by path)

OpenRLHF and slime need no Python code: they post to the server directly
(docs/trainers.md has the flags).
"""

from .client import AsyncClient, Client, ServeError, TransportError, basic_auth_url
from .labels import label

__all__ = ["AsyncClient", "Client", "ServeError", "TransportError", "basic_auth_url", "label"]
__version__ = "0.1.0"
